import { defer, Observable, share, startWith, takeUntil } from 'rxjs';
import { TimerClock } from '../../common/clock';
import { ClusterKeys } from '../cluster-view';
import { ClusterView, DcsChange } from '../dcs.port';
import { ClusterKeyCache } from './cluster-key-cache';
import { EtcdClient } from './etcd-client';
import { KeyValue, nextRevision } from './etcd-types';
import { followPrefix, PrefixFollower } from './prefix-watch';

/**
 * One watch of the cluster prefix, shared by every subscriber of `changes()`, and the key cache it
 * keeps current while it runs.
 *
 * The cache stands in for a read only while it can be trusted: the watch is live (registered, not
 * broken), no request to etcd has failed since it was registered (a failure may mean that its
 * connection died too: the client then ends the watch, which resumes), and a read confirmed the
 * cache within the caller's bound. The watch needs no silence timer of its own: those confirming
 * reads and the failures of the node's other requests notice a dead connection, and etcd ends a
 * watch on a member that lost its leader (EtcdClient.watch).
 */
export class ClusterWatch {
  private readonly cache: ClusterKeyCache;
  private readonly shared: Observable<DcsChange>;
  /** Registered, not broken since, and not distrusted since. */
  private live = false;
  /** Whether the shared watch has been registered since its first subscriber: a later subscriber gets a resync of its own. */
  private registered = false;
  /** clock.monotonic() of the last read folded into the cache (the watch's own, or a caller's). */
  private confirmedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly client: EtcdClient,
    private readonly prefix: string,
    requestTimeoutMs: number,
    private readonly clock: TimerClock,
    closing: Observable<void>,
  ) {
    this.cache = new ClusterKeyCache(prefix);
    this.shared = new Observable<DcsChange>((subscriber) => {
      const unsubscribed = new AbortController();
      const follower: PrefixFollower = {
        seeded: (kvs, revision) => this.confirmed(kvs, revision),
        created: (resync) => {
          this.live = true;
          this.registered = true;
          if (resync) subscriber.next({ key: null, type: 'resync' });
        },
        changed: (events) => {
          // The cache first: a subscriber woken by the change reads it there.
          this.cache.apply(events);
          for (const event of events) subscriber.next({ key: event.kv.key.slice(prefix.length), type: event.type });
        },
        broken: () => {
          this.live = false;
        },
      };
      // The client ends the watch when one of its requests fails (it resumes); the cache is distrusted at once.
      const stopListening = client.onRequestFailed(() => (this.live = false));
      void followPrefix(client, prefix, follower, {
        requestTimeoutMs,
        stop: unsubscribed.signal,
        restartWhenSilentMs: null,
      });
      return () => {
        stopListening();
        this.live = false;
        this.registered = false;
        unsubscribed.abort();
      };
    }).pipe(takeUntil(closing), share());
  }

  /** Every change under the prefix; `{ key: null }` first when changes may have been missed (see Dcs.changes). */
  changes(): Observable<DcsChange> {
    // As with a watch of its own, a late subscriber first hears that it may have missed changes.
    return defer(() =>
      this.registered ? this.shared.pipe(startWith<DcsChange>({ key: null, type: 'resync' })) : this.shared,
    );
  }

  /** A consistent read of the prefix: the cache takes it unless it already holds a later state. */
  confirmed(kvs: KeyValue[], revision: string): void {
    this.cache.replace(kvs, revision);
    this.confirmedAt = this.clock.monotonic();
  }

  /**
   * Confirms a live cache without reading its values (issue 35: the full read every CACHE_CONFIRM_TTLS ttls was a
   * fifth of an idle agent's bytes from etcd): two small ranges of the prefix, the keys (without values) modified
   * after the cache's revision R, and the count of all keys (etcd's count ignores min_mod_revision, so the first
   * is keys-only, not count-only). None modified after R and as many keys as the cache holds mean the
   * prefix holds exactly the cache's keys at their revisions (a key deleted and made again has a newer revision; a
   * delete lowers the count). False, with nothing confirmed, when the watch is not live or anything differs: the
   * caller reads.
   */
  async confirmUnchanged(timeoutMs: () => number): Promise<boolean> {
    const held = this.cache.state();
    if (!this.live || !held) return false;
    const [changed, all] = await Promise.all([
      this.client.range(
        this.prefix,
        { prefix: true, keysOnly: true, minModRevision: nextRevision(held.revision) },
        timeoutMs(),
      ),
      this.client.range(this.prefix, { prefix: true, countOnly: true }, timeoutMs()),
    ]);
    if (changed.kvs.length !== 0 || all.count !== held.keys || !this.live) return false;
    this.confirmedAt = this.clock.monotonic();
    return true;
  }

  /**
   * The cached cluster and its raw leader key (null: none), when the watch is live and a read confirmed
   * it less than `maxAgeMs` ago; else null.
   */
  trustedView(maxAgeMs: number): { view: ClusterView; leader: KeyValue | null } | null {
    if (!this.live || this.clock.monotonic() - this.confirmedAt >= maxAgeMs) return null;
    const view = this.cache.view();
    return view && { view, leader: this.cache.get(ClusterKeys.leader) };
  }
}
