import { LogCheckpoint } from './log-checkpoint';
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

/** Values that are not events (written by someone else) are skipped rather than thrown. */
export function parseEvent(value: string): RecordedEvent | null {
  try {
    const event = JSON.parse(value) as RecordedEvent;
    return typeof event?.stream === 'string' && typeof event.seq === 'number' ? event : null;
  } catch {
    return null;
  }
}
