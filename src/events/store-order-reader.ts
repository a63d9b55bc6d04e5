import { RecordedEvent } from './event';
import { EventStore, StreamRange } from './event-store.port';
import { LogCheckpoint } from './log-checkpoint';

/** Events read per round over all streams: what one round holds in memory. */
export const EVENTS_PER_ROUND = 2000;

/**
 * How an agent reads the whole stored log at start: small rounds, and a pause after each, so the
 * garbage of one round (the etcd answer, its base64 values, the parsed events) is collected before
 * the next one is allocated. Read at full speed, 30,000 events left a restarted agent 13–16 MiB
 * larger, for as long as it ran, than one that had received them live; paced, 2–5% (see
 * docs/benchmarks.md). It costs 25 ms per 500 events: 1.5 s more for 30,000.
 */
export const PACED_READ = { eventsPerRound: 500, pauseMs: 25 };

/**
 * Reads the stored log (from the checkpoint on) in store order, a bounded batch at a time,
 * without ever holding the whole log. Each round reads the next seqs of every stream in one
 * ranged read (which answers in store order); a stream that has more beyond its range may have
 * unread events before later ones of the batch, so the batch is handed over only up to the last
 * event read of such a stream, and the rest is read again in the next round.
 *
 * `onBatch` may return false to stop early. Events appended after the heads were read are left
 * to the caller's subscription. `pauseMs`: a pause after each round but the last.
 */
export async function readInStoreOrder(
  store: EventStore,
  checkpoint: LogCheckpoint | null,
  onBatch: (events: RecordedEvent[]) => boolean | void | Promise<boolean | void>,
  eventsPerRound = EVENTS_PER_ROUND,
  pauseMs = 0,
): Promise<void> {
  const next = new Map<string, number>();
  const last = new Map<string, number>();
  for (const { stream, seq } of await store.streamHeads()) {
    const first = (checkpoint?.streams[stream]?.seq ?? 0) + 1;
    if (seq >= first) {
      next.set(stream, first);
      last.set(stream, seq);
    }
  }
  while (next.size > 0) {
    const perStream = Math.max(1, Math.floor(eventsPerRound / next.size));
    const ranges: StreamRange[] = [...next].map(([stream, fromSeq]) => ({
      stream,
      fromSeq,
      toSeq: Math.min(last.get(stream)!, fromSeq + perStream - 1),
    }));
    const batch = await store.readRanges(ranges);
    let complete = batch.length;
    for (const range of ranges) {
      const lastRead = batch.map((event) => event.stream).lastIndexOf(range.stream);
      // Nothing stored in the range (removed meanwhile): nothing to wait for there.
      if (lastRead < 0) next.set(range.stream, range.toSeq + 1);
      else if (range.toSeq < last.get(range.stream)!) complete = Math.min(complete, lastRead + 1);
    }
    const handed = batch.slice(0, complete);
    for (const event of handed) next.set(event.stream, event.seq + 1);
    for (const [stream, seq] of next) if (seq > last.get(stream)!) next.delete(stream);
    if ((await onBatch(handed)) === false) return;
    if (pauseMs > 0 && next.size > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
}

/**
 * Reads the stored log (down to the checkpoint) newest first, a bounded batch at a time: the mirror
 * of readInStoreOrder. A stream that has older events beyond its range may have unread events
 * between older ones of the batch, so the batch is handed over only down to the oldest event read
 * of such a stream, and the rest is read again in the next round. `onBatch` may return false to stop;
 * `pauseMs`: a pause after each round but the last.
 */
export async function readNewestFirst(
  store: EventStore,
  checkpoint: LogCheckpoint | null,
  onBatch: (events: RecordedEvent[]) => boolean | void | Promise<boolean | void>,
  eventsPerRound = EVENTS_PER_ROUND,
  pauseMs = 0,
): Promise<void> {
  const first = new Map<string, number>();
  const next = new Map<string, number>();
  for (const { stream, seq } of await store.streamHeads()) {
    const firstKept = (checkpoint?.streams[stream]?.seq ?? 0) + 1;
    if (seq >= firstKept) {
      first.set(stream, firstKept);
      next.set(stream, seq);
    }
  }
  while (next.size > 0) {
    const perStream = Math.max(1, Math.floor(eventsPerRound / next.size));
    const ranges: StreamRange[] = [...next].map(([stream, toSeq]) => ({
      stream,
      fromSeq: Math.max(first.get(stream)!, toSeq - perStream + 1),
      toSeq,
    }));
    const batch = await store.readRanges(ranges);
    let complete = 0;
    for (const range of ranges) {
      const oldestRead = batch.findIndex((event) => event.stream === range.stream);
      if (oldestRead < 0) next.set(range.stream, range.fromSeq - 1);
      else if (range.fromSeq > first.get(range.stream)!) complete = Math.max(complete, oldestRead);
    }
    const handed = batch.slice(complete).reverse();
    for (const event of handed) next.set(event.stream, Math.min(next.get(event.stream)!, event.seq - 1));
    for (const [stream, seq] of next) if (seq < first.get(stream)!) next.delete(stream);
    if ((await onBatch(handed)) === false) return;
    if (pauseMs > 0 && next.size > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
}
