import { Clock } from '../common/clock';
import { DEFAULT_EVENT_LOG } from '../config/event-log-config';
import { RecordedEvent } from './event';
import { evolveAll, initialProjections, ServedProjections } from './event-log';
import { EventStore } from './event-store.port';
import { CheckpointConflict, LogCheckpoint, StreamCheckpoint } from './log-checkpoint';
import { PACED_READ, readInStoreOrder, readNewestFirst } from './store-order-reader';

/** How long the stored log keeps events: by age, by count per stream, and by the bytes of the whole log. */
export interface RetentionPolicy {
  maxAgeMs: number;
  maxEventsPerStream: number;
  /** The log's stored size (the events' JSON, as etcd holds them) after a cut. */
  maxBytes: number;
}

export const DEFAULT_RETENTION: RetentionPolicy = {
  maxAgeMs: DEFAULT_EVENT_LOG.max_age * 1000,
  maxEventsPerStream: DEFAULT_EVENT_LOG.max_events_per_stream,
  maxBytes: DEFAULT_EVENT_LOG.max_bytes,
};
/** Every 6 hours (the first run at a random moment within the first period, so nodes do not run together). */
const DEFAULT_INTERVAL_MS = 6 * 60 * 60_000;
/** One run gives up after this long; what it did not remove waits for the next run. */
const DEFAULT_DEADLINE_MS = 60_000;

export interface EventRetentionOptions {
  store: EventStore;
  clock: Clock;
  policy?: Partial<RetentionPolicy>;
  intervalMs?: number;
  deadlineMs?: number;
  logger?: { warn(message: string): void; log(message: string): void };
}

/** What one run did. */
export interface RetentionOutcome {
  /** Events removed per stream by this run (empty: nothing was due). */
  removed: Record<string, number>;
  /** Why the run stopped without cutting, when it did. */
  skipped?: string;
}

/**
 * Keeps the stored event log within its retention policy. A run finds the cut: the longest
 * prefix in store order whose events are older than `maxAgeMs`, extended so that no stream keeps
 * more than `maxEventsPerStream` events and the rest of the log fits in `maxBytes` (a first pass
 * reads the newest events, as far as `maxBytes` reaches, to find where that is). It folds the projections over the removed events onto
 * the previous checkpoint's (reading only as far as the cut, in bounded batches), writes the new checkpoint
 * with compare-and-set (so when two nodes run at once, one cuts and the other finds a conflict and
 * does nothing), then the store removes the covered events.
 *
 * Every node runs it on its own timer, off the HA loop, with a deadline per run.
 */
export class EventRetention {
  private readonly policy: RetentionPolicy;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private readonly stopped = new AbortController();
  private readonly logger: { warn(message: string): void; log(message: string): void };

  constructor(private readonly options: EventRetentionOptions) {
    this.policy = { ...DEFAULT_RETENTION, ...options.policy };
    this.logger = options.logger ?? { warn: () => undefined, log: () => undefined };
  }

  start(): void {
    const interval = this.options.intervalMs ?? DEFAULT_INTERVAL_MS;
    const schedule = (delay: number) => {
      this.timer = setTimeout(() => {
        if (this.stopped.signal.aborted) return;
        this.running = this.runOnce()
          .then((outcome) => this.report(outcome))
          .catch((error) =>
            this.logger.warn(
              `event log retention failed, retrying in ${Math.round(interval / 1000)} s: ${(error as Error).message}`,
            ),
          )
          .finally(() => schedule(interval));
      }, delay);
      this.timer.unref();
    };
    schedule(Math.floor(Math.random() * interval));
  }

  async stop(): Promise<void> {
    this.stopped.abort();
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /**
   * One run, within the deadline: reads the log from the checkpoint in bounded batches (store
   * order, paced as the agent's read at start), folding as it goes and remembering the fold at the last event the policy removes;
   * stops as soon as no later event can be due.
   */
  async runOnce(): Promise<RetentionOutcome> {
    const deadline = AbortSignal.any([
      this.stopped.signal,
      AbortSignal.timeout(this.options.deadlineMs ?? DEFAULT_DEADLINE_MS),
    ]);
    const { store } = this.options;
    const checkpoint = await store.readCheckpoint();
    // By count: per stream, the seqs up to this one go.
    const dueByCount = new Map<string, number>();
    for (const { stream, seq } of await store.streamHeads()) {
      const kept = seq - (checkpoint?.streams[stream]?.seq ?? 0);
      if (kept > this.policy.maxEventsPerStream) dueByCount.set(stream, seq - this.policy.maxEventsPerStream);
    }
    for (const [stream, seq] of await this.dueByBytes(checkpoint, deadline))
      dueByCount.set(stream, Math.max(seq, dueByCount.get(stream) ?? 0));
    const oldestKept = this.options.clock.now() - this.policy.maxAgeMs;
    let agePrefixEnded = false;
    let state: ServedProjections = { ...initialProjections(), ...checkpoint?.projections };
    const lastRead: Record<string, StreamCheckpoint> = { ...checkpoint?.streams };
    const readCount: Record<string, number> = {};
    let cut: {
      projections: ServedProjections;
      streams: Record<string, StreamCheckpoint>;
      removed: Record<string, number>;
    } | null = null;

    await readInStoreOrder(
      store,
      checkpoint,
      (batch) => {
        for (const event of batch) {
          agePrefixEnded ||= Date.parse(event.at) >= oldestKept;
          state = evolveAll(state, event);
          lastRead[event.stream] = { seq: event.seq, hash: event.hash ?? '', at: event.at };
          readCount[event.stream] = (readCount[event.stream] ?? 0) + 1;
          if (!agePrefixEnded || event.seq <= (dueByCount.get(event.stream) ?? 0)) {
            cut = { projections: state, streams: { ...lastRead }, removed: { ...readCount } };
          }
          if (event.seq >= (dueByCount.get(event.stream) ?? Infinity)) dueByCount.delete(event.stream);
          if (agePrefixEnded && dueByCount.size === 0) return false;
        }
        return !deadline.aborted;
      },
      PACED_READ.eventsPerRound,
      PACED_READ.pauseMs,
    );
    if (deadline.aborted) return { removed: {}, skipped: 'the deadline passed before the cut was found' };
    if (cut === null) {
      await this.finishEarlierRemoval(checkpoint, deadline);
      return { removed: {} };
    }
    const { projections, streams, removed } = cut;
    const next: LogCheckpoint = { cutAt: new Date(this.options.clock.now()).toISOString(), streams, projections };
    try {
      await store.writeCheckpoint(next, checkpoint, deadline);
    } catch (error) {
      if (error instanceof CheckpointConflict) return { removed: {}, skipped: 'another node cut the log meanwhile' };
      throw error;
    }
    return { removed };
  }

  /**
   * By bytes: per stream, the seqs up to this one go, so that the newest events that fit in
   * `maxBytes` stay. Reads the newest events only, as far as the budget reaches.
   */
  private async dueByBytes(checkpoint: LogCheckpoint | null, deadline: AbortSignal): Promise<Map<string, number>> {
    const due = new Map<string, number>();
    const oldestKept = new Map<string, number>();
    const heads = await this.options.store.streamHeads();
    let keptBytes = 0;
    await readNewestFirst(
      this.options.store,
      checkpoint,
      (batch) => {
        for (const event of batch) {
          keptBytes += storedBytes(event);
          if (keptBytes > this.policy.maxBytes) {
            // This event and every older one go: in each stream, what comes before its oldest kept event.
            for (const { stream, seq } of heads) {
              const lastDue = oldestKept.has(stream) ? oldestKept.get(stream)! - 1 : seq;
              if (lastDue > (checkpoint?.streams[stream]?.seq ?? 0)) due.set(stream, lastDue);
            }
            return false;
          }
          oldestKept.set(event.stream, event.seq);
        }
        return !deadline.aborted;
      },
      PACED_READ.eventsPerRound,
      PACED_READ.pauseMs,
    );
    return due;
  }

  /** An earlier run may have stopped before removing everything its checkpoint covers: the last covered key tells. */
  private async finishEarlierRemoval(checkpoint: LogCheckpoint | null, deadline: AbortSignal): Promise<void> {
    if (!checkpoint) return;
    const lastCovered = Object.entries(checkpoint.streams).map(([stream, { seq }]) => ({
      stream,
      fromSeq: seq,
      toSeq: seq,
    }));
    if ((await this.options.store.readRanges(lastCovered)).length > 0)
      await this.options.store.writeCheckpoint(checkpoint, checkpoint, deadline);
  }

  private report(outcome: RetentionOutcome): void {
    if (outcome.skipped) this.logger.log(`event log retention: ${outcome.skipped}`);
    const streams = Object.entries(outcome.removed);
    if (streams.length === 0) return;
    const total = streams.reduce((sum, [, n]) => sum + n, 0);
    this.logger.log(`event log retention removed ${total} events from ${streams.length} streams, after a checkpoint`);
  }
}

/** An event's size as the store holds it: its JSON. */
function storedBytes(event: RecordedEvent): number {
  return Buffer.byteLength(JSON.stringify(event), 'utf8');
}
