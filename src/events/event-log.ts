import { Observable, Subject, Subscription } from 'rxjs';
import {
  evolveAll,
  initialProjections,
  rebuildProjections,
  type ServedProjections,
} from '../projections/served-projections';
import { RecordedEvent } from './event';
import { readPage } from './event-page';
import { CachedEvent, EventPage, EventPageRequest, EventQuery, matchesQuery } from './event-query';
import { EventStore } from './event-store.port';
import { LogCheckpoint } from './log-checkpoint';
import { PACED_READ, readInStoreOrder } from './store-order-reader';

// The fold lives in src/projections/served-projections.ts (pure, shared with the page's time travel).
export { evolveAll, initialProjections, rebuildProjections };
export type { CachedEvent, EventPage, EventPageRequest, EventQuery, ServedProjections };

export interface EventLogOptions {
  /** The cache keeps at most this many recent events (default MAX_CACHED_EVENTS)... */
  maxCachedEvents?: number;
  /** ...and at most this many bytes of their JSON (default MAX_CACHED_BYTES). */
  maxCachedBytes?: number;
}

export const MAX_CACHED_EVENTS = 5000;
/** 16 MiB: with events of at most 16 KiB of data, never fewer than about a thousand events. */
export const MAX_CACHED_BYTES = 16 * 1024 * 1024;
/** The cache array is compacted once this many evicted slots have piled up at its front. */
const COMPACT_AFTER = 1024;

/**
 * The cluster's event log as this node sees it: the stored log read once at start, in bounded
 * batches from where retention's checkpoint left it, and then followed through the store's subscription, with the
 * projections folded as events arrive. Only the most recent events stay in memory (at most
 * `maxCachedEvents` and `maxCachedBytes`); the projections are folds, so their state stays whole
 * when old events leave the cache. Pages older than the cache are read from the store on demand.
 */
export class EventLog {
  private cache: CachedEvent[] = [];
  /** Index of the oldest cached event in `cache` (evicted slots before it are compacted lazily). */
  private cacheStart = 0;
  private cachedBytes = 0;
  /** Highest seq seen per stream: anything at or below it is a repeat. One number per stream, unlike a set of every event. */
  private readonly lastSeq = new Map<string, number>();
  /** Per stream, the highest seq no longer in the cache (evicted, or before the cache was filled) and when it happened. */
  private readonly evicted = new Map<string, { seq: number; at: number }>();
  private readonly added = new Subject<RecordedEvent>();
  private subscription: Subscription | null = null;
  private state: ServedProjections = initialProjections();
  /** Events the subscription delivers while the stored log is being read; added after it, in order. */
  private liveWhileLoading: RecordedEvent[] | null = [];
  private readonly maxCachedEvents: number;
  private readonly maxCachedBytes: number;

  constructor(
    private readonly store: EventStore,
    options: EventLogOptions = {},
  ) {
    this.maxCachedEvents = options.maxCachedEvents ?? MAX_CACHED_EVENTS;
    this.maxCachedBytes = options.maxCachedBytes ?? MAX_CACHED_BYTES;
  }

  /**
   * Follows new events and reads the stored log, rebuilding the projections from the checkpoint
   * (or zero). While the store is unreachable the read is retried in the background: the agent
   * does not wait for it.
   */
  start(
    onError: (message: string) => void = () => undefined,
    onRead: (message: string) => void = () => undefined,
  ): void {
    this.subscription = this.store.subscribe().subscribe({
      next: (event) => (this.liveWhileLoading ? this.liveWhileLoading.push(event) : this.add(event)),
      error: (e) => onError(`event feed: ${String(e)}`),
    });
    void this.readAll(onError, onRead);
  }

  /** Resolves once the stored log has been read. */
  whenLoaded(): Promise<void> {
    return this.loaded;
  }

  private loadedResolve!: () => void;
  private readonly loaded = new Promise<void>((resolve) => (this.loadedResolve = resolve));
  private stopped = false;

  /**
   * Folds the stored log from the checkpoint on, a bounded batch at a time (the agent never holds
   * the whole log). A cut made by retention during the read removes events it has not reached:
   * then the read starts over from the new checkpoint.
   */
  private async readAll(onError: (message: string) => void, onRead: (message: string) => void): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        const started = performance.now();
        let read = 0;
        const checkpoint = await this.store.readCheckpoint();
        this.resetTo(checkpoint);
        const onBatch = (batch: RecordedEvent[]) => {
          for (const event of batch) this.add(event);
          read += batch.length;
          return !this.stopped;
        };
        await readInStoreOrder(this.store, checkpoint, onBatch, PACED_READ.eventsPerRound, PACED_READ.pauseMs);
        if (JSON.stringify(await this.store.readCheckpoint()) !== JSON.stringify(checkpoint)) {
          onError('retention cut the event log while it was being read; reading it again');
          continue;
        }
        const live = this.liveWhileLoading ?? [];
        this.liveWhileLoading = null;
        for (const event of live) this.add(event);
        onRead(
          `event log read: ${read} events${checkpoint ? ' after the retention checkpoint' : ''} in ${((performance.now() - started) / 1000).toFixed(1)} s`,
        );
        this.loadedResolve();
        return;
      } catch (error) {
        if (attempt === 0) onError(`reading the event log failed, retrying: ${String(error)}`);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
  }

  /** Empty cache, projections and positions as the checkpoint leaves them. */
  private resetTo(checkpoint: LogCheckpoint | null): void {
    this.cache = [];
    this.cacheStart = 0;
    this.cachedBytes = 0;
    this.lastSeq.clear();
    this.evicted.clear();
    this.state = checkpoint
      ? { ...initialProjections(), ...structuredClone(checkpoint.projections) }
      : initialProjections();
    for (const [stream, { seq, at }] of Object.entries(checkpoint?.streams ?? {})) {
      this.lastSeq.set(stream, seq);
      this.evicted.set(stream, { seq, at: Date.parse(at) });
    }
  }

  stop(): void {
    this.stopped = true;
    this.subscription?.unsubscribe();
    this.added.complete();
  }

  /** New events as they are stored, for the live feed. */
  feed(): Observable<RecordedEvent> {
    return this.added.asObservable();
  }

  projections(): ServedProjections {
    return this.state;
  }

  /** The cached events matching `filter`, oldest first (the latest `limit`). Never reads the store. */
  query(filter: EventQuery = {}): RecordedEvent[] {
    const matching = this.cached()
      .filter((cached) => matchesQuery(cached.event, filter))
      .map((cached) => cached.event);
    return filter.limit === undefined ? matching : matching.slice(-filter.limit);
  }

  /**
   * The latest `limit` events matching the filters and older than `before`, oldest first, within
   * `maxBytes` of JSON; from the cache, and from the store where the cache no longer reaches.
   */
  /**
   * The stored checkpoint retention last wrote (null: nothing was ever removed), read now: a
   * reader of every page folds from its projections, as `stator audit replay --at` does.
   */
  storedCheckpoint(): Promise<LogCheckpoint | null> {
    return this.store.readCheckpoint();
  }

  page(request: EventPageRequest): Promise<EventPage> {
    return readPage(
      {
        store: this.store,
        cached: () => this.cached(),
        streams: () => [...this.lastSeq.keys()],
        lastSeq: (stream) => this.lastSeq.get(stream) ?? 0,
        evicted: (stream) => this.evicted.get(stream) ?? null,
      },
      request,
    );
  }

  /** How many events and bytes the cache holds now. */
  cacheSize(): { events: number; bytes: number } {
    return { events: this.cache.length - this.cacheStart, bytes: this.cachedBytes };
  }

  private cached(): CachedEvent[] {
    return this.cache.slice(this.cacheStart);
  }

  /** Events arrive once from the initial read and possibly again from the subscription. */
  private add(event: RecordedEvent): void {
    if (event.seq <= (this.lastSeq.get(event.stream) ?? 0)) return;
    this.lastSeq.set(event.stream, event.seq);
    const bytes = Buffer.byteLength(JSON.stringify(event));
    this.cache.push({ event, bytes });
    this.cachedBytes += bytes;
    this.state = evolveAll(this.state, event);
    this.evictBeyondBounds();
    this.added.next(event);
  }

  /** Oldest first, keeping at least the newest event. */
  private evictBeyondBounds(): void {
    while (
      this.cache.length - this.cacheStart > 1 &&
      (this.cache.length - this.cacheStart > this.maxCachedEvents || this.cachedBytes > this.maxCachedBytes)
    ) {
      const { event, bytes } = this.cache[this.cacheStart++];
      this.cachedBytes -= bytes;
      this.evicted.set(event.stream, { seq: event.seq, at: Date.parse(event.at) });
    }
    if (this.cacheStart >= COMPACT_AFTER) {
      this.cache = this.cache.slice(this.cacheStart);
      this.cacheStart = 0;
    }
  }
}
