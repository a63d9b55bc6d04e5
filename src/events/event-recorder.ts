import { setTimeout as sleep } from 'node:timers/promises';
import { Logger } from '@nestjs/common';
import { Observable, Subject } from 'rxjs';
import { Clock } from '../common/clock';
import { NewEvent, RecordedEvent } from './event';
import { boundEvent } from './event-bounds';
import { EventStore, ExpectedVersion, ExpectedVersionConflict, MAX_STREAMS_PER_APPEND } from './event-store.port';
import { FileQueueStorage, QUEUE_FILE } from './file-queue-storage';
import { LocalEvent, QueueStorage } from './queue-storage.port';
import { Backoff } from '../common/backoff';

export { QUEUE_FILE };
export type { LocalEvent };

export interface EventRecorderOptions {
  store: EventStore;
  /** Directory of the durable queue (in the data directory); created when missing. */
  queueDir: string;
  /** This node's name: streams `node/<node>/...` get their seq here, at record time. */
  node: string;
  clock: Clock;
  /** Receives re-based seqs and store outages (timed with `clock`). Default: Nest's Logger. */
  logger?: { warn(message: string): void; log(message: string): void };
  /** Where queued events wait. Default: files in `queueDir`. */
  storage?: QueueStorage;
}

/** See EventRecorder.queueState. */
export interface EventQueueState {
  depth: number;
  oldestAt: number | null;
  storeDownSince: number | null;
}

const MAX_BATCH = 50;
/** How far back a possibly-applied cluster append is looked for, beyond our own events (other nodes append too). */
const CLUSTER_TAIL_MARGIN = 100;

/**
 * The node-side event writer, with a durable local queue so that no event is lost while the
 * store is unreachable.
 *
 * `record()` is synchronous and never waits for a disk: an event on one of this node's streams
 * (`node/<node>/...`) gets its seq from a per-stream counter there and then, and every event is
 * handed to the queue storage, which makes it durable in the background together with whatever is
 * recorded meanwhile (group commit, see FileQueueStorage). A background flusher sends the queue to
 * the store in recording order, its leading events of every stream in one atomic append
 * (appendStreams): what was recorded while the last append was on its way goes in the next one, so
 * the slower etcd answers, the fewer revisions a burst costs (issue 35: in a fleet's switchover storm
 * the appends were 70% of what etcd applied, one per run of same-stream events). It retries with a
 * backoff of up to 1 s while the store is down, and tells the storage how far the store has them.
 *
 * Own streams are appended at their recorded position (expectedVersion = seq - 1). When that
 * position is taken, the stored events are compared with the queued ones: identical events
 * (an append whose answer was lost, or a crash before the queue was rewritten) count as flushed;
 * otherwise (seqs stored by an earlier incarnation whose queue is gone) the remaining queued
 * events of the stream are re-based after the stored head, with a warning. Other streams are
 * appended with 'any'; after a failed or interrupted append they are first matched against the
 * stream's tail so a retry does not store them twice.
 */
export class EventRecorder {
  private readonly storage: QueueStorage;
  private readonly logger: { warn(message: string): void; log(message: string): void };
  private readonly recorded = new Subject<LocalEvent>();
  private queue: LocalEvent[] = [];
  private readonly lastAssignedSeq = new Map<string, number>();
  /** 'any' streams whose last append may have been applied without us knowing. */
  private readonly uncertainStreams = new Set<string>();
  private loaded = false;
  private started = false;
  private stopped = false;
  private flushRun: Promise<void> | null = null;
  private readonly stopSignal = new AbortController();
  private flushWaiters: { resolve: () => void; reject: (error: Error) => void }[] = [];
  private storeDownSince: number | null = null;

  /** Every recorded event, at once and locally (before it reaches the store). */
  readonly recorded$: Observable<LocalEvent> = this.recorded.asObservable();

  constructor(private readonly options: EventRecorderOptions) {
    this.logger = options.logger ?? new Logger(EventRecorder.name);
    this.storage = options.storage ?? new FileQueueStorage(options.queueDir, (message) => this.logger.warn(message));
  }

  /**
   * Queues one event durably, its data within the size cap (event-bounds.ts), and returns it with
   * its seq when this node owns the stream (void for the cluster stream, whose seq is assigned
   * when stored). Works before start() and after stop(): the event then waits in the queue file
   * for the next start.
   */
  record(unbounded: NewEvent): RecordedEvent | void {
    this.load();
    // Bounded here already (the store bounds again, idempotently), so the queue file stays small
    // and a queued event compares equal to its stored copy.
    const event = boundEvent(unbounded);
    const local: LocalEvent = this.ownsStream(event.stream)
      ? { ...event, seq: this.nextSeq(event.stream) }
      : { ...event };
    this.storage.append(local);
    this.queue.push(local);
    this.recorded.next({ ...local });
    // Flush after the caller's synchronous work, batched with whatever it records next.
    queueMicrotask(() => this.kickFlusher());
    return local.seq === undefined ? undefined : ({ ...local } as RecordedEvent);
  }

  /**
   * Loads the queue and seq counters left by a previous run, raises the counters to the store's
   * heads where the store answers (within its own request deadline), then flushes in the background.
   */
  async start(): Promise<void> {
    this.load();
    const streams = [...this.lastAssignedSeq.keys()];
    const heads = await Promise.allSettled(streams.map((stream) => this.options.store.lastSeq(stream)));
    heads.forEach((head, index) => {
      const stream = streams[index];
      if (head.status === 'fulfilled' && head.value > (this.lastAssignedSeq.get(stream) ?? 0)) {
        this.lastAssignedSeq.set(stream, head.value);
      }
    });
    this.started = true;
    this.kickFlusher();
  }

  /** Events recorded but not yet stored. */
  pending(): number {
    return this.queue.length;
  }

  /**
   * The queue as it stands, from memory: how many events wait, when the oldest of them happened
   * (epoch ms, null when none wait), and since when the store has refused appends (null while it takes them).
   */
  queueState(): EventQueueState {
    const oldest = this.queue.length > 0 ? Date.parse(this.queue[0].at) : NaN;
    return {
      depth: this.queue.length,
      oldestAt: Number.isFinite(oldest) ? oldest : null,
      storeDownSince: this.storeDownSince,
    };
  }

  /** Resolves once every event recorded so far is durable in the queue storage (or stored and forgotten there). */
  whenWritten(): Promise<void> {
    return this.storage.whenWritten();
  }

  /** Resolves once the queue is empty; rejects if the recorder is stopped first. */
  whenFlushed(): Promise<void> {
    if (this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => this.flushWaiters.push({ resolve, reject }));
  }

  /** Stops flushing (waits for an append in flight); whatever is still queued stays in the file for the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopSignal.abort();
    await this.flushRun;
    await this.storage.close();
    const waiters = this.flushWaiters;
    this.flushWaiters = [];
    for (const waiter of waiters)
      waiter.reject(new Error(`event recorder stopped with ${this.queue.length} events queued`));
    this.recorded.complete();
  }

  private ownsStream(stream: string): boolean {
    return stream.startsWith(`node/${this.options.node}/`);
  }

  private nextSeq(stream: string): number {
    const seq = (this.lastAssignedSeq.get(stream) ?? 0) + 1;
    this.lastAssignedSeq.set(stream, seq);
    return seq;
  }

  /** Reads what the storage kept from a previous run, once (synchronously, so record() can run before start()). */
  private load(): void {
    if (this.loaded) return;
    this.loaded = true;
    const { events, seqs } = this.storage.load();
    for (const [stream, seq] of Object.entries(seqs)) this.lastAssignedSeq.set(stream, seq);
    for (const event of events) {
      this.queue.push(event);
      if (event.seq === undefined) this.uncertainStreams.add(event.stream);
      else if (event.seq > (this.lastAssignedSeq.get(event.stream) ?? 0))
        this.lastAssignedSeq.set(event.stream, event.seq);
    }
  }

  private seqs(): Record<string, number> {
    return Object.fromEntries(this.lastAssignedSeq);
  }

  /** The queue changed other than at its head: the storage writes it again whole. */
  private persist(): void {
    this.storage.rewrite(() => this.queue, this.seqs());
  }

  private kickFlusher(): void {
    if (this.flushRun || !this.started || this.stopped || this.queue.length === 0) return;
    this.flushRun = this.drain().finally(() => {
      this.flushRun = null;
      this.kickFlusher(); // events recorded while the run was finishing
    });
  }

  private async drain(): Promise<void> {
    const backoff = new Backoff();
    while (this.queue.length > 0 && !this.stopped) {
      try {
        await this.flushNext();
        backoff.reset();
        if (this.storeDownSince !== null) {
          const downForMs = this.options.clock.now() - this.storeDownSince;
          this.logger.log(
            `event store reachable again after ${downForMs} ms; ${this.queue.length} events still queued`,
          );
          this.storeDownSince = null;
        }
      } catch (error) {
        if (this.storeDownSince === null) {
          this.storeDownSince = this.options.clock.now();
          this.logger.warn(
            `event store unavailable, events wait in the local queue (${this.options.queueDir}): ${(error as Error).message}`,
          );
        }
        await sleep(backoff.next(), undefined, { signal: this.stopSignal.signal }).catch(() => undefined);
      }
    }
    if (this.queue.length === 0) {
      const waiters = this.flushWaiters;
      this.flushWaiters = [];
      for (const waiter of waiters) waiter.resolve();
    }
  }

  /** One step: store the leading events (every stream's in one append), or reconcile a stream with the store first. */
  private async flushNext(): Promise<void> {
    const first = this.queue[0];
    if (first.seq === undefined && this.uncertainStreams.has(first.stream)) {
      await this.dropAlreadyStored(first.stream);
      this.uncertainStreams.delete(first.stream);
      return;
    }
    const batch = this.nextBatch();
    // Own streams at their recorded positions, others ('any') wherever their head is.
    const expected = new Map<string, ExpectedVersion>();
    for (const event of batch) {
      if (!expected.has(event.stream)) expected.set(event.stream, event.seq === undefined ? 'any' : event.seq - 1);
    }
    try {
      await this.options.store.appendStreams(batch.map(withoutSeq), expected);
    } catch (error) {
      if (error instanceof ExpectedVersionConflict && expected.get(error.stream) !== 'any') {
        await this.reconcileOwnStream(error.stream, error.actual);
        return;
      }
      for (const [stream, expectedVersion] of expected) {
        if (expectedVersion === 'any') this.uncertainStreams.add(stream);
      }
      throw error;
    }
    this.queue.splice(0, batch.length);
    this.storage.markStored(batch.length, this.seqs());
  }

  /**
   * The leading queued events, up to MAX_BATCH of at most MAX_STREAMS_PER_APPEND streams, stopping
   * before an event of a stream whose last append may have been applied (dropAlreadyStored first).
   */
  private nextBatch(): LocalEvent[] {
    const streams = new Set<string>();
    const batch: LocalEvent[] = [];
    for (const event of this.queue) {
      if (batch.length >= MAX_BATCH) break;
      if (!streams.has(event.stream)) {
        if (streams.size >= MAX_STREAMS_PER_APPEND) break;
        if (batch.length > 0 && event.seq === undefined && this.uncertainStreams.has(event.stream)) break;
        streams.add(event.stream);
      }
      batch.push(event);
    }
    return batch;
  }

  /**
   * The stream's next position is taken (or the store is behind our counter). Queued events the
   * store already holds identically are dropped; the rest are renumbered to follow the stored head.
   */
  private async reconcileOwnStream(stream: string, storedHead: number): Promise<void> {
    const queued = this.queue.filter((event) => event.stream === stream);
    const firstSeq = queued[0].seq ?? 1;
    const stored = storedHead >= firstSeq ? await this.options.store.read({ stream, fromSeq: firstSeq }) : [];
    const storedBySeq = new Map(stored.map((event) => [event.seq, event]));
    let alreadyStored = 0;
    while (
      alreadyStored < queued.length &&
      sameEvent(storedBySeq.get(queued[alreadyStored].seq ?? 0), queued[alreadyStored])
    ) {
      alreadyStored++;
    }
    const flushed = new Set(queued.slice(0, alreadyStored));
    const remaining = queued.slice(alreadyStored);
    const renumbered = new Map<LocalEvent, LocalEvent>(
      remaining.map((event, index) => [event, { ...event, seq: storedHead + 1 + index }]),
    );
    if (remaining.length > 0 && remaining[0].seq !== storedHead + 1) {
      this.logger.warn(
        `event stream ${stream}: seq ${remaining[0].seq} is not next after the stored head ${storedHead} ` +
          `(an earlier incarnation's events); re-based ${remaining.length} queued events ` +
          `to ${storedHead + 1}..${storedHead + remaining.length}`,
      );
    }
    this.queue = this.queue.filter((event) => !flushed.has(event)).map((event) => renumbered.get(event) ?? event);
    this.lastAssignedSeq.set(stream, storedHead + remaining.length);
    this.persist();
  }

  /** After an append that may have been applied: drop the leading queued events of the stream found in its stored tail. */
  private async dropAlreadyStored(stream: string): Promise<void> {
    const queued = this.queue.filter((event) => event.stream === stream);
    const head = await this.options.store.lastSeq(stream);
    const fromSeq = Math.max(1, head - queued.length - CLUSTER_TAIL_MARGIN + 1);
    const tail = head > 0 ? await this.options.store.read({ stream, fromSeq }) : [];
    let alreadyStored = 0;
    while (alreadyStored < queued.length && tail.some((stored) => sameEvent(stored, queued[alreadyStored], false))) {
      alreadyStored++;
    }
    if (alreadyStored === 0) return;
    const flushed = new Set(queued.slice(0, alreadyStored));
    this.queue = this.queue.filter((event) => !flushed.has(event));
    this.persist();
  }
}

function withoutSeq(event: LocalEvent): NewEvent {
  const { seq: _seq, ...rest } = event;
  return rest;
}

/** Same fact: every field equal (data by its JSON), seq included unless `compareSeq` is false. */
function sameEvent(stored: RecordedEvent | undefined, queued: LocalEvent, compareSeq = true): boolean {
  if (!stored) return false;
  return (
    (!compareSeq || stored.seq === queued.seq) &&
    stored.stream === queued.stream &&
    stored.type === queued.type &&
    stored.at === queued.at &&
    stored.node === queued.node &&
    stored.from === queued.from &&
    stored.to === queued.to &&
    stored.cause === queued.cause &&
    JSON.stringify(stored.data ?? null) === JSON.stringify(queued.data ?? null)
  );
}
