import { Observable, Subject, Subscription } from 'rxjs';
import { ClusterProjection, clusterProjection } from '../projections/cluster';
import { historyProjection } from '../projections/history';
import { ScheduledOperation, scheduleProjection } from '../projections/schedule';
import { HistoryEntry } from '../dcs/dcs.port';
import { RecordedEvent } from './event';
import { EventStore } from './event-store.port';

export interface EventQuery {
  stream?: string;
  node?: string;
  type?: string;
  /** With `stream`: only events with seq >= fromSeq. */
  fromSeq?: number;
  /** Only events at or after this instant (epoch ms). */
  since?: number;
  limit?: number;
}

/** The projections the node serves, kept current one event at a time. */
export interface ServedProjections {
  cluster: ClusterProjection;
  history: HistoryEntry[];
  schedule: ScheduledOperation[];
}

/**
 * The cluster's event log as this node sees it: every stored event, read once at start and then
 * followed through the store's subscription, with the projections folded as events arrive. The
 * API reads it from memory; nothing here waits on etcd after start.
 */
export class EventLog {
  private readonly events: RecordedEvent[] = [];
  private readonly seen = new Set<string>();
  private readonly added = new Subject<RecordedEvent>();
  private subscription: Subscription | null = null;
  private state: ServedProjections = initialProjections();

  constructor(private readonly store: EventStore) {}

  /**
   * Follows new events and reads the stored log, rebuilding the projections from zero. While the
   * store is unreachable the read is retried in the background: the agent does not wait for it.
   */
  start(onError: (message: string) => void = () => undefined): void {
    this.subscription = this.store.subscribe().subscribe({ next: (event) => this.add(event), error: (e) => onError(`event feed: ${String(e)}`) });
    void this.readAll(onError);
  }

  /** Resolves once the stored log has been read. */
  whenLoaded(): Promise<void> {
    return this.loaded;
  }

  private loadedResolve!: () => void;
  private readonly loaded = new Promise<void>((resolve) => (this.loadedResolve = resolve));
  private stopped = false;

  private async readAll(onError: (message: string) => void): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt++) {
      try {
        for (const event of await this.store.read()) this.add(event);
        this.loadedResolve();
        return;
      } catch (error) {
        if (attempt === 0) onError(`reading the event log failed, retrying: ${String(error)}`);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
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

  query(filter: EventQuery = {}): RecordedEvent[] {
    const matching = this.events.filter(
      (e) =>
        (filter.stream === undefined || e.stream === filter.stream) &&
        (filter.node === undefined || e.node === filter.node) &&
        (filter.type === undefined || e.type === filter.type) &&
        (filter.fromSeq === undefined || e.seq >= filter.fromSeq) &&
        (filter.since === undefined || Date.parse(e.at) >= filter.since),
    );
    return filter.limit === undefined ? matching : matching.slice(-filter.limit);
  }

  /** Events arrive once from the initial read and possibly again from the subscription. */
  private add(event: RecordedEvent): void {
    const key = `${event.stream}#${event.seq}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.events.push(event);
    this.state = evolveAll(this.state, event);
    this.added.next(event);
  }
}

export function initialProjections(): ServedProjections {
  return { cluster: clusterProjection.initial(), history: historyProjection.initial(), schedule: scheduleProjection.initial() };
}

export function evolveAll(state: ServedProjections, event: RecordedEvent): ServedProjections {
  return {
    cluster: clusterProjection.evolve(state.cluster, event),
    history: historyProjection.evolve(state.history, event),
    schedule: scheduleProjection.evolve(state.schedule, event),
  };
}

/** Every projection rebuilt from zero. */
export function rebuildProjections(events: Iterable<RecordedEvent>): ServedProjections {
  let state = initialProjections();
  for (const event of events) state = evolveAll(state, event);
  return state;
}
