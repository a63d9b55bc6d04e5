import type { ClusterView } from '../dcs.port';
import { parseClusterView } from '../cluster-view';
import { compareRevisions, KeyValue, WatchEvent } from './etcd-types';

/**
 * The cluster's keys as this node last knew them, between reads kept current by the prefix watch
 * (the reference's KVCache). A consistent read replaces the whole state; a watch event applies only
 * when it is not older than the state's revision, so an event that arrives after a read that already
 * holds it can never undo that read. Events of one watch arrive in revision order.
 */
export class ClusterKeyCache {
  private readonly kvs = new Map<string, KeyValue>();
  /** Revision of the state held, null before the first read. */
  private revision: string | null = null;
  /** The parsed view of the state held, built once per revision. */
  private parsed: ClusterView | null = null;

  constructor(private readonly prefix: string) {}

  /** Everything under the prefix at `revision` (a range). An older read than the state held changes nothing. */
  replace(kvs: KeyValue[], revision: string): void {
    if (this.revision !== null && compareRevisions(revision, this.revision) < 0) return;
    this.kvs.clear();
    for (const kv of kvs) this.kvs.set(kv.key, kv);
    this.revision = revision;
    this.parsed = null;
  }

  /**
   * Watch events, in revision order; those older than the state are skipped. One of the state's own
   * revision is applied again, which changes nothing (a read at R holds every change made at R), and
   * must not be skipped: the changes of one transaction share a revision (a revoked lease deletes the
   * leader key and the member key together).
   */
  apply(events: WatchEvent[]): void {
    for (const { type, kv } of events) {
      if (this.revision === null || compareRevisions(kv.modRevision, this.revision) < 0) continue;
      if (type === 'delete') this.kvs.delete(kv.key);
      else this.kvs.set(kv.key, kv);
      this.revision = kv.modRevision;
      this.parsed = null;
    }
  }

  /** The revision of the state held and how many keys it has, or null before the first read. */
  state(): { revision: string; keys: number } | null {
    return this.revision === null ? null : { revision: this.revision, keys: this.kvs.size };
  }

  /** One key as held, by its name relative to the prefix (`leader`), or null. */
  get(relativeKey: string): KeyValue | null {
    return this.kvs.get(this.prefix + relativeKey) ?? null;
  }

  /** The state as a ClusterView, or null before the first read. */
  view(): ClusterView | null {
    if (this.revision === null) return null;
    this.parsed ??= parseClusterView(
      [...this.kvs.values()].map((kv) => ({ ...kv, key: kv.key.slice(this.prefix.length) })),
      this.revision,
    );
    return this.parsed;
  }
}
