import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { Clock } from '../common/clock';
import { RecordedEvent } from './event';
import { evolveAll, initialProjections, ServedProjections } from './event-log';
import { EventStore } from './event-store.port';
import { CheckpointConflict, coveredByCheckpoint, LogCheckpoint } from './log-checkpoint';

/** How long the stored log keeps events, by age and by count per stream. */
export interface RetentionPolicy {
  maxAgeMs: number;
  maxEventsPerStream: number;
}

const DAY_MS = 24 * 60 * 60_000;
export const DEFAULT_RETENTION: RetentionPolicy = { maxAgeMs: 30 * DAY_MS, maxEventsPerStream: 100_000 };
/** Every 6 hours (the first run at a random moment within the first period, so nodes do not run together). */
const DEFAULT_INTERVAL_MS = 6 * 60 * 60_000;
/** One run gives up after this long; what it did not remove waits for the next run. */
const DEFAULT_DEADLINE_MS = 60_000;
/** Folding yields to the event loop this often, so the HA loop never waits on a long fold. */
const FOLD_SLICE = 1000;

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
 * Keeps the stored event log within its retention policy. A run reads the log (and the last
 * checkpoint), finds the cut: the longest prefix in store order whose events are older than
 * `maxAgeMs`, extended so that no stream keeps more than `maxEventsPerStream` events. It folds the
 * projections over the removed events onto the previous checkpoint's, writes the new checkpoint
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
          .catch((error) => this.logger.warn(`event log retention failed, retrying in ${Math.round(interval / 1000)} s: ${(error as Error).message}`))
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

  /** One run, within the deadline. */
  async runOnce(): Promise<RetentionOutcome> {
    const deadline = AbortSignal.any([this.stopped.signal, AbortSignal.timeout(this.options.deadlineMs ?? DEFAULT_DEADLINE_MS)]);
    const { store } = this.options;
    const checkpoint = await store.readCheckpoint();
    const stored = await store.read();
    const events = stored.filter((event) => !coveredByCheckpoint(checkpoint, event.stream, event.seq));
    const cut = this.cutIndex(events);
    if (cut === 0) {
      // An earlier run may have stopped before removing everything its checkpoint covers.
      if (checkpoint && events.length < stored.length) await store.writeCheckpoint(checkpoint, checkpoint, deadline);
      return { removed: {} };
    }
    const removed = events.slice(0, cut);
    const projections = await foldInSlices(checkpoint?.projections ?? initialProjections(), removed, deadline);
    if (deadline.aborted) return { removed: {}, skipped: 'the deadline passed while folding' };
    const next: LogCheckpoint = {
      cutAt: new Date(this.options.clock.now()).toISOString(),
      streams: { ...checkpoint?.streams },
      projections,
    };
    const counts: Record<string, number> = {};
    for (const event of removed) {
      next.streams[event.stream] = { seq: event.seq, hash: event.hash ?? '', at: event.at };
      counts[event.stream] = (counts[event.stream] ?? 0) + 1;
    }
    try {
      await store.writeCheckpoint(next, checkpoint, deadline);
    } catch (error) {
      if (error instanceof CheckpointConflict) return { removed: {}, skipped: 'another node cut the log meanwhile' };
      throw error;
    }
    return { removed: counts };
  }

  /** How many leading events (store order) the policy removes. */
  private cutIndex(events: RecordedEvent[]): number {
    const oldestKept = this.options.clock.now() - this.policy.maxAgeMs;
    let cut = 0;
    while (cut < events.length && Date.parse(events[cut].at) < oldestKept) cut++;
    const perStream = new Map<string, number[]>();
    events.forEach((event, index) => {
      const indexes = perStream.get(event.stream) ?? [];
      indexes.push(index);
      perStream.set(event.stream, indexes);
    });
    for (const indexes of perStream.values()) {
      const excess = indexes.length - this.policy.maxEventsPerStream;
      if (excess > 0) cut = Math.max(cut, indexes[excess - 1] + 1);
    }
    return cut;
  }

  private report(outcome: RetentionOutcome): void {
    if (outcome.skipped) this.logger.log(`event log retention: ${outcome.skipped}`);
    const streams = Object.entries(outcome.removed);
    if (streams.length === 0) return;
    const total = streams.reduce((sum, [, n]) => sum + n, 0);
    this.logger.log(`event log retention removed ${total} events from ${streams.length} streams, after a checkpoint`);
  }
}

async function foldInSlices(from: ServedProjections, events: RecordedEvent[], deadline: AbortSignal): Promise<ServedProjections> {
  let state = { ...initialProjections(), ...from };
  for (let i = 0; i < events.length && !deadline.aborted; i++) {
    state = evolveAll(state, events[i]);
    if (i % FOLD_SLICE === FOLD_SLICE - 1) await yieldToEventLoop();
  }
  return state;
}
