import { Observable } from 'rxjs';
import { NewEvent, RecordedEvent } from './event';
import { LogCheckpoint } from './log-checkpoint';

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

/** Seqs `fromSeq` to `toSeq` (both included) of one stream. */
export interface StreamRange {
  stream: string;
  fromSeq: number;
  toSeq: number;
}

/** The most streams one appendStreams call may write (each costs its head's compare and put in etcd's txn). */
export const MAX_STREAMS_PER_APPEND = 20;

/** The most events one readRanges call may ask for, over all its ranges. */
export const MAX_RANGED_READ_EVENTS = 20_000;

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
  /**
   * Appends events of several streams in one atomic write, stored in the order given (each event
   * names its stream; every stream is a key of `expected`). Either all are stored or none: a stream
   * whose numeric expectation fails rejects the whole write with ExpectedVersionConflict (the first
   * such stream in `expected`'s order); 'any' streams take their next free positions. One revision
   * for a flush of a node's streams, where one append per stream made one each (issue 35).
   */
  appendStreams(events: NewEvent[], expected: ReadonlyMap<string, ExpectedVersion>): Promise<RecordedEvent[]>;
  read(filter?: EventFilter): Promise<RecordedEvent[]>;
  /**
   * The stored events of each range, all ranges together in store order: a bounded read of part of
   * the log (keys are read by range, never the whole log). Rejects asking for more than
   * MAX_RANGED_READ_EVENTS. Seqs removed by retention or not yet written are simply absent.
   */
  readRanges(ranges: StreamRange[]): Promise<RecordedEvent[]>;
  /** Where retention last cut the log; null when it never did. */
  readCheckpoint(): Promise<LogCheckpoint | null>;
  /**
   * Writes `next` in place of `expected` (compare-and-set: CheckpointConflict when the stored one
   * is not `expected`), then removes the events it covers. Removal may stop part-way (deadline,
   * outage): the events left are covered by the checkpoint, readers skip them, and the next call
   * removes them.
   */
  writeCheckpoint(next: LogCheckpoint, expected: LogCheckpoint | null, signal?: AbortSignal): Promise<void>;
  /** Last seq of a stream, 0 when empty. */
  lastSeq(stream: string): Promise<number>;
  /** Every stream with its last seq (one read of the heads, not of the events). */
  streamHeads(): Promise<{ stream: string; seq: number }[]>;
  /** Events appended after subscription, in store order. */
  subscribe(): Observable<RecordedEvent>;
  close(): Promise<void>;
}

/** Refuses malformed ranges and reads larger than MAX_RANGED_READ_EVENTS (ranges are inclusive: `fromSeq..toSeq`). */
export function assertRangesWithinLimit(ranges: StreamRange[]): void {
  let total = 0;
  for (const range of ranges) {
    if (!Number.isInteger(range.fromSeq) || !Number.isInteger(range.toSeq) || range.fromSeq < 1) {
      throw new Error(`invalid range of ${range.stream}: ${range.fromSeq}..${range.toSeq}`);
    }
    total += Math.max(0, range.toSeq - range.fromSeq + 1);
  }
  if (total > MAX_RANGED_READ_EVENTS)
    throw new Error(`a ranged read of ${total} events exceeds ${MAX_RANGED_READ_EVENTS}`);
}
