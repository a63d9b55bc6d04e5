import { Observable, Subject } from 'rxjs';
import { NewEvent, RecordedEvent } from './event';
import {
  assertRangesWithinLimit,
  EventFilter,
  EventStore,
  ExpectedVersion,
  ExpectedVersionConflict,
  StreamRange,
} from './event-store.port';
import { ChainHead, chainEvents, chainStreams } from './hash-chain';
import { CheckpointConflict, coveredByCheckpoint, LogCheckpoint } from './log-checkpoint';

/**
 * EventStore in an array, in append order, with the same concurrency rules, hash chain and
 * checkpoints as EtcdEventStore.
 */
export class MemoryEventStore implements EventStore {
  private events: RecordedEvent[] = [];
  private readonly heads = new Map<string, ChainHead>();
  private readonly appended = new Subject<RecordedEvent>();
  private checkpoint: LogCheckpoint | null = null;

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

  async appendStreams(events: NewEvent[], expected: ReadonlyMap<string, ExpectedVersion>): Promise<RecordedEvent[]> {
    for (const [stream, expectedVersion] of expected) {
      const seq = this.heads.get(stream)?.seq ?? 0;
      if (expectedVersion !== 'any' && expectedVersion !== seq)
        throw new ExpectedVersionConflict(stream, expectedVersion, seq);
    }
    const unexpected = events.find((event) => !expected.has(event.stream));
    if (unexpected) throw new Error(`appendStreams: no expected version for ${unexpected.stream}`);
    const stored = chainStreams(events, this.heads);
    this.events.push(...stored);
    for (const event of stored) this.heads.set(event.stream, { seq: event.seq, hash: event.hash });
    for (const event of stored) this.appended.next(event);
    return stored.map((event) => ({ ...event }));
  }

  async read(filter: EventFilter = {}): Promise<RecordedEvent[]> {
    return this.events
      .filter((event) => filter.stream === undefined || event.stream === filter.stream)
      .filter((event) => filter.fromSeq === undefined || event.seq >= filter.fromSeq)
      .map((event) => ({ ...event }));
  }

  async readRanges(ranges: StreamRange[]): Promise<RecordedEvent[]> {
    assertRangesWithinLimit(ranges);
    return this.events
      .filter((event) =>
        ranges.some((range) => range.stream === event.stream && event.seq >= range.fromSeq && event.seq <= range.toSeq),
      )
      .map((event) => ({ ...event }));
  }

  async lastSeq(stream: string): Promise<number> {
    return this.heads.get(stream)?.seq ?? 0;
  }

  async streamHeads(): Promise<{ stream: string; seq: number }[]> {
    return [...this.heads].map(([stream, head]) => ({ stream, seq: head.seq }));
  }

  async readCheckpoint(): Promise<LogCheckpoint | null> {
    return this.checkpoint && structuredClone(this.checkpoint);
  }

  async writeCheckpoint(next: LogCheckpoint, expected: LogCheckpoint | null): Promise<void> {
    if (JSON.stringify(this.checkpoint) !== JSON.stringify(expected))
      throw new CheckpointConflict('the checkpoint changed since it was read');
    this.checkpoint = structuredClone(next);
    const checkpoint = this.checkpoint;
    this.events = this.events.filter((event) => !coveredByCheckpoint(checkpoint, event.stream, event.seq));
  }

  subscribe(): Observable<RecordedEvent> {
    return this.appended.asObservable();
  }

  async close(): Promise<void> {
    this.appended.complete();
  }
}
