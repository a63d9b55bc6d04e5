import { setTimeout as sleep } from 'node:timers/promises';
import { DcsChange } from '../dcs.port';
import { EtcdClient, nextRevision, watchUntilBroken } from './etcd-client';

const FIRST_RETRY_DELAY_MS = 100;
const MAX_RETRY_DELAY_MS = 1000;

/**
 * Keeps one watch of `prefix` running until `stop` fires: learn the current revision, watch from the
 * next one, emit a resync once the watch is live, and start over with a growing pause (max 1 s)
 * whenever the watch breaks or etcd cannot be reached. Keys are emitted relative to the prefix.
 */
export async function followPrefix(
  client: EtcdClient,
  prefix: string,
  requestTimeoutMs: number,
  emit: (change: DcsChange) => void,
  stop: AbortSignal,
): Promise<void> {
  let delay = FIRST_RETRY_DELAY_MS;
  while (!stop.aborted) {
    try {
      const { revision } = await client.range(prefix, { prefix: true, countOnly: true }, requestTimeoutMs);
      const watch = client.watch(prefix, { prefix: true, startRevision: nextRevision(revision) }, requestTimeoutMs);
      await watchUntilBroken(watch, stop, (response) => {
        if (response.created) {
          delay = FIRST_RETRY_DELAY_MS;
          emit({ key: null, type: 'resync' });
        }
        for (const event of response.events) emit({ key: event.kv.key.slice(prefix.length), type: event.type });
      });
    } catch {
      // unreachable or broken watch: start over below
    }
    if (stop.aborted) return;
    await sleep(delay, undefined, { signal: stop }).catch(() => undefined);
    delay = Math.min(delay * 2, MAX_RETRY_DELAY_MS);
  }
}
