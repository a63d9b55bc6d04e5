import { compareRevisions, KeyValue } from '../dcs/etcd/etcd-client';
import { LogCheckpoint } from './log-checkpoint';
import { ExpectedVersion, ExpectedVersionConflict } from './event-store.port';
import { RecordedEvent } from './event';
import { ChainHead } from './hash-chain';

/* What the etcd event store reads back from its keys (heads, the checkpoint, events) and which stream names it refuses. */

export const HEADS = 'heads';
/** The key (not a folder) of the LogCheckpoint retention writes. */
export const CHECKPOINT = 'checkpoint';

/** `heads` is the head keys' folder and `checkpoint` a key of its own, so no stream may live there. */
export function assertStreamName(stream: string): void {
  if (!stream || stream === HEADS || stream === CHECKPOINT || stream.startsWith(`${HEADS}/`) || stream.endsWith('/')) {
    throw new Error(`invalid event stream name: '${stream}'`);
  }
}

/** A stream head and the exact value of its key (null: no key), which the next append compares. */
export interface StoredHead extends ChainHead {
  value: string | null;
}

/** `{"seq":N,"hash":"..."}`, or a bare seq from older versions (unchained history: hash ''). */
export function parseHead(value: string | undefined): StoredHead {
  if (value === undefined) return { seq: 0, hash: '', value: null };
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    parsed = null;
  }
  const chained = typeof parsed === 'object' && parsed !== null ? (parsed as Partial<ChainHead>) : null;
  const seq = chained ? Number(chained.seq) : Number(parsed);
  const hash = chained && typeof chained.hash === 'string' ? chained.hash : '';
  return { seq: Number.isInteger(seq) && seq > 0 ? seq : 0, hash, value };
}

/** A checkpoint that does not parse is refused rather than treated as none: retention must not start over. */
export function parseCheckpoint(value: string): LogCheckpoint {
  const parsed = JSON.parse(value) as LogCheckpoint;
  if (typeof parsed?.streams !== 'object' || parsed.streams === null || typeof parsed.projections !== 'object') {
    throw new Error(`the stored event log checkpoint is not one: ${value.slice(0, 120)}`);
  }
  return parsed;
}

/**
 * The field a txn that writes several streams adds to each of its events' values: the event's place
 * in the txn, since all of them share one mod revision and only the order within a stream shows in the seqs.
 */
export const IN_TXN = 'inTxn';

/** An event as read from its key: its place within its txn (0 when the txn wrote one stream). */
export interface StoredEvent {
  event: RecordedEvent;
  inTxn: number;
}

/** Values that are not events (written by someone else) are skipped rather than thrown. */
export function parseStoredEvent(value: string): StoredEvent | null {
  try {
    const { [IN_TXN]: inTxn, ...event } = JSON.parse(value) as RecordedEvent & { [IN_TXN]?: unknown };
    if (typeof event?.stream !== 'string' || typeof event.seq !== 'number') return null;
    return { event, inTxn: typeof inTxn === 'number' ? inTxn : 0 };
  } catch {
    return null;
  }
}

export function parseEvent(value: string): RecordedEvent | null {
  return parseStoredEvent(value)?.event ?? null;
}

/** The first stream whose numeric expectation its head does not meet. */
export function firstConflict(
  expected: ReadonlyMap<string, ExpectedVersion>,
  heads: ReadonlyMap<string, StoredHead>,
): ExpectedVersionConflict | null {
  for (const [stream, expectedVersion] of expected) {
    const seq = heads.get(stream)!.seq;
    if (expectedVersion !== 'any' && seq !== expectedVersion)
      return new ExpectedVersionConflict(stream, expectedVersion, seq);
  }
  return null;
}

/**
 * The events of `keys` whose values parse (and belong to `stream` where one is given), in store
 * order: by mod revision, then by place in their txn, then by seq.
 */
export function inStoreOrder(keys: { kv: KeyValue; stream: string | null }[]): RecordedEvent[] {
  return keys
    .map(({ kv, stream }) => {
      const stored = parseStoredEvent(kv.value);
      return { kv, stored: stream === null || stored?.event.stream === stream ? stored : null };
    })
    .filter((entry): entry is { kv: KeyValue; stored: StoredEvent } => entry.stored !== null)
    .sort(
      (a, b) =>
        compareRevisions(a.kv.modRevision, b.kv.modRevision) ||
        a.stored.inTxn - b.stored.inTxn ||
        a.stored.event.seq - b.stored.event.seq,
    )
    .map((entry) => entry.stored.event);
}
