import { setTimeout as sleep } from 'node:timers/promises';
import { EtcdClient, nextRevision, WatchSilentError, watchUntilBroken } from './etcd-client';
import { KeyValue, WatchEvent } from './etcd-types';
import { Backoff } from '../../common/backoff';

/** What a prefix watch tells its owner, in this order: seeded, created, changed..., broken, (seeded,) created... */
export interface PrefixFollower {
  /** A fresh start read everything under the prefix, at `revision`; the watch starts right after it. */
  seeded(kvs: KeyValue[], revision: string): void;
  /**
   * The server registered the watch: every later change is delivered. `resync`: it started afresh,
   * so changes before it may have been missed (a resumed watch missed nothing).
   */
  created(resync: boolean): void;
  changed(events: WatchEvent[]): void;
  /** Nothing is delivered until the next `created`. */
  broken(): void;
}

/** Options of followPrefix: the deadline of its requests, when to stop, and whether a silent watch is resumed. */
export interface FollowOptions {
  requestTimeoutMs: number;
  stop: AbortSignal;
  /** Resume a watch silent this long on a fresh connection (EtcdClient.watch); null: never. */
  restartWhenSilentMs?: number | null;
}

/**
 * Keeps one watch of `prefix` running until `stop` fires: read the prefix, watch from the next
 * revision, and start over with a growing pause (max 1 s) whenever the watch breaks or etcd cannot
 * be reached (etcd may have restarted, even without its data). A watch its client ended (a silence,
 * a failed request) resumes after the last change it delivered: nothing was missed, no re-read.
 */
export async function followPrefix(
  client: EtcdClient,
  prefix: string,
  follower: PrefixFollower,
  options: FollowOptions,
): Promise<void> {
  const { stop, requestTimeoutMs } = options;
  const backoff = new Backoff();
  let resumeFrom: string | null = null;
  while (!stop.aborted) {
    try {
      const fresh = resumeFrom === null;
      const startRevision: string = resumeFrom ?? (await seed(client, prefix, follower, requestTimeoutMs));
      resumeFrom = startRevision;
      const watch = client.watch(
        prefix,
        { prefix: true, startRevision, restartWhenSilentMs: options.restartWhenSilentMs },
        requestTimeoutMs,
      );
      await watchUntilBroken(watch, stop, (response) => {
        if (response.created) {
          backoff.reset();
          follower.created(fresh);
        }
        if (response.events.length === 0) return;
        follower.changed(response.events);
        resumeFrom = nextRevision(response.events[response.events.length - 1].kv.modRevision);
      });
    } catch (error) {
      // Only a silence is resumed where it was; anything else is read afresh, with a resync.
      if (!(error instanceof WatchSilentError)) resumeFrom = null;
    }
    follower.broken();
    if (stop.aborted) return;
    await sleep(backoff.next(), undefined, { signal: stop }).catch(() => undefined);
  }
}

/** Reads everything under the prefix for the follower; returns the revision the watch starts from. */
async function seed(
  client: EtcdClient,
  prefix: string,
  follower: PrefixFollower,
  requestTimeoutMs: number,
): Promise<string> {
  const read = await client.range(prefix, { prefix: true }, requestTimeoutMs);
  follower.seeded(read.kvs, read.revision);
  return nextRevision(read.revision);
}
