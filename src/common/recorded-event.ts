/**
 * One recorded fact: a transition of a machine on a node, or a cluster fact.
 * Streams: `node/<name>/<machine>` for node machines, `cluster` for cluster facts.
 */
export interface RecordedEvent {
  stream: string;
  /** Position within the stream, from 1, without gaps. */
  seq: number;
  /** What happened, e.g. `postgres.transition`, `role.transition`, `ha.verdict`, `leader.acquired`. */
  type: string;
  /** ISO 8601 time in UTC (older events may carry an offset), when the event happened on the node (not when it was stored). */
  at: string;
  node: string;
  /** Machine state before and after (dotted path for nested states); null for facts that are not transitions. */
  from: string | null;
  to: string | null;
  /** The machine event or reason that caused it. */
  cause: string;
  data?: Record<string, unknown>;
  /**
   * Hash chain (see hash-chain.ts), set by the store: the hash of the previous event of the
   * stream ('' for the first) and this event's own. Absent on events stored before the chain.
   */
  prev?: string;
  hash?: string;
}

/** What a producer hands over; the store assigns stream position and chain. */
export type NewEvent = Omit<RecordedEvent, 'seq' | 'prev' | 'hash'>;

/** The one format of an event's `at`: ISO 8601 in UTC with milliseconds (`2026-11-27T17:39:11.343Z`). */
export function eventTime(epochMs: number): string {
  return new Date(epochMs).toISOString();
}

/** An event's `at` in that format whatever it was stored with (older events carry an offset); unreadable text as it is. */
export function shownEventTime(at: string): string {
  const epochMs = Date.parse(at);
  return Number.isNaN(epochMs) ? at : eventTime(epochMs);
}
