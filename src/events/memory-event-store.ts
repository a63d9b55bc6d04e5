import { Observable, Subject } from 'rxjs';
import { NewEvent, RecordedEvent } from './event';
import { EventFilter, EventStore, ExpectedVersion, ExpectedVersionConflict } from './event-store.port';
import { ChainHead, chainEvents } from './hash-chain';

/**
 * EventStore in an array, in append order, with the same concurrency rules and hash chain as
 * EtcdEventStore.
 */
export class MemoryEventStore implements EventStore {
  private readonly events: RecordedEvent[] = [];
  private readonly heads = new Map<string, ChainHead>();
  private readonly appended = new Subject<RecordedEvent>();

  async append(stream: string, events: NewEvent[], expectedVersion: ExpectedVersion): Promise<RecordedEvent[]> {
    const head = this.heads.get(stream) ?? { seq: 0, hash: '' };
    if (expectedVersion !== 'any' && expectedVersion !== head.seq) {
      throw new ExpectedVersionConflict(stream, expectedVersion, head.seq);
    }
    const stored = chainEvents(stream, events, head);
    if (stored.length === 0) return [];
    this.events.push(...stored);
    const last = stored[stored.length - 1];
    this.heads.set(stream, { seq: last.seq, hash: last.hash });
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
    return this.heads.get(stream)?.seq ?? 0;
  }

  subscribe(): Observable<RecordedEvent> {
    return this.appended.asObservable();
  }

  async close(): Promise<void> {
    this.appended.complete();
  }
}
