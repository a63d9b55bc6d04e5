import { setTimeout as sleep } from 'node:timers/promises';
import { DcsChange } from '../dcs.port';
import { EtcdClient, nextRevision, WatchSilentError, watchUntilBroken } from './etcd-client';

const FIRST_RETRY_DELAY_MS = 100;
const MAX_RETRY_DELAY_MS = 1000;

/**
 * Keeps one watch of `prefix` running until `stop` fires: learn the current revision, watch from the
 * next one, emit a resync once the watch is live, and start over with a growing pause (max 1 s)
 * whenever the watch breaks or etcd cannot be reached (etcd may have restarted, even without its
 * data). A watch the client ended after a silence resumes after the last change it delivered
 * instead: nothing was missed, and no re-read is needed. Keys are emitted relative to the prefix.
 */
export async function followPrefix(
  client: EtcdClient,
  prefix: string,
  requestTimeoutMs: number,
  emit: (change: DcsChange) => void,
  stop: AbortSignal,
): Promise<void> {
  let delay = FIRST_RETRY_DELAY_MS;
  let resumeFrom: string | null = null;
  while (!stop.aborted) {
    try {
      const fresh = resumeFrom === null;
      resumeFrom ??= nextRevision((await client.range(prefix, { prefix: true, countOnly: true }, requestTimeoutMs)).revision);
      const watch = client.watch(prefix, { prefix: true, startRevision: resumeFrom }, requestTimeoutMs);
      await watchUntilBroken(watch, stop, (response) => {
        if (response.created) {
          delay = FIRST_RETRY_DELAY_MS;
          if (fresh) emit({ key: null, type: 'resync' });
        }
        for (const event of response.events) {
          emit({ key: event.kv.key.slice(prefix.length), type: event.type });
          resumeFrom = nextRevision(event.kv.modRevision);
        }
      });
    } catch (error) {
      // Only a silence is resumed where it was; anything else is read afresh, with a resync.
      if (!(error instanceof WatchSilentError)) resumeFrom = null;
    }
    if (stop.aborted) return;
    await sleep(delay, undefined, { signal: stop }).catch(() => undefined);
    delay = Math.min(delay * 2, MAX_RETRY_DELAY_MS);
  }
}
