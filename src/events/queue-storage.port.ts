import type { NewEvent } from './event';

/** An event as recorded locally. `seq` is absent for streams whose seq the store assigns (the cluster stream). */
export type LocalEvent = NewEvent & { seq?: number };

/**
 * Where the recorder keeps the events it has not stored yet, so that none is lost while the store is
 * unreachable or across an agent restart. Every call returns at once: the writes happen in the
 * background, in call order, each group of appends made durable by one flush (group commit), so that
 * recording never holds the event loop (and a health answer) on a disk flush.
 */
export interface QueueStorage {
  /** What a previous run left: the events still to store, in recording order, and the last seq assigned per own stream. */
  load(): { events: LocalEvent[]; seqs: Record<string, number> };
  /** Appends one event; it is durable once `whenWritten()` resolves after this call. */
  append(event: LocalEvent): void;
  /** The first `count` events of the queue are in the store now; `seqs` are the counters to keep. */
  markStored(count: number, seqs: Record<string, number>): void;
  /** The queue changed other than at its head (events dropped or renumbered): write it again whole, as `current()` gives it then. */
  rewrite(current: () => LocalEvent[], seqs: Record<string, number>): void;
  /** Resolves once everything handed over so far is durable. */
  whenWritten(): Promise<void>;
  /** Waits for the writes in flight, then writes synchronously from here on (an agent about to exit). */
  close(): Promise<void>;
}
