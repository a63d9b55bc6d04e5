import { Observable } from 'rxjs';
import { NewEvent, RecordedEvent } from './event';

/** Stream position expectation for optimistic concurrency: the current last seq, or 'any'. */
export type ExpectedVersion = number | 'any';

export class ExpectedVersionConflict extends Error {
  override readonly name = 'ExpectedVersionConflict';
  constructor(
    readonly stream: string,
    readonly expected: ExpectedVersion,
    readonly actual: number,
  ) {
    super(`stream ${stream}: expected version ${expected}, found ${actual}`);
  }
}

export interface EventFilter {
  stream?: string;
  /** Only events with seq >= fromSeq (meaningful with `stream`). */
  fromSeq?: number;
}

/**
 * Append-only event storage. Adapters: etcd v3 (own prefix) and in-memory.
 * `readAll` returns every stream's events in store order (the order they were appended).
 */
export interface EventStore {
  /**
   * Appends events to one stream. With a numeric `expectedVersion` the append fails with
   * ExpectedVersionConflict unless the stream's last seq equals it. With 'any', events take
   * the next free positions. Resolves with the events as stored.
   */
  append(stream: string, events: NewEvent[], expectedVersion: ExpectedVersion): Promise<RecordedEvent[]>;
  read(filter?: EventFilter): Promise<RecordedEvent[]>;
  /** Last seq of a stream, 0 when empty. */
  lastSeq(stream: string): Promise<number>;
  /** Events appended after subscription, in store order. */
  subscribe(): Observable<RecordedEvent>;
  close(): Promise<void>;
}
