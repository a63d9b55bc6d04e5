import { Observable, Subject } from 'rxjs';
import { NewEvent, RecordedEvent } from './event';
import { EventFilter, EventStore, ExpectedVersion, ExpectedVersionConflict } from './event-store.port';

/** EventStore in an array, in append order, with the same concurrency rules as EtcdEventStore. */
export class MemoryEventStore implements EventStore {
  private readonly events: RecordedEvent[] = [];
  private readonly heads = new Map<string, number>();
  private readonly appended = new Subject<RecordedEvent>();

  async append(stream: string, events: NewEvent[], expectedVersion: ExpectedVersion): Promise<RecordedEvent[]> {
    const head = this.heads.get(stream) ?? 0;
    if (expectedVersion !== 'any' && expectedVersion !== head) {
      throw new ExpectedVersionConflict(stream, expectedVersion, head);
    }
    const stored = events.map((event, index) => ({ ...event, stream, seq: head + index + 1 }));
    this.events.push(...stored);
    this.heads.set(stream, head + stored.length);
    for (const event of stored) this.appended.next(event);
    return stored.map((event) => ({ ...event }));
  }

  async read(filter: EventFilter = {}): Promise<RecordedEvent[]> {
    return this.events
      .filter((event) => filter.stream === undefined || event.stream === filter.stream)
      .filter((event) => filter.fromSeq === undefined || event.seq >= filter.fromSeq)
      .map((event) => ({ ...event }));
  }

  async lastSeq(stream: string): Promise<number> {
    return this.heads.get(stream) ?? 0;
  }

  subscribe(): Observable<RecordedEvent> {
    return this.appended.asObservable();
  }

  async close(): Promise<void> {
    this.appended.complete();
  }
}
