import { sleep } from '../../common/clock';
import { errorText } from '../../common/error-text';
import { NodeActors } from '../node-actors';
import { isNoSync } from './sync-candidates';
import { syncNames } from './sync-key';
import { memberKeyOf } from '../node-member-key';

/** How often a leaving standby reads `/sync` again. */
const POLL_MS = 1_000;

/**
 * Runs `work` (a restart, a shutdown) after the leader has let this synchronous standby go, so that
 * commits do not wait for it meanwhile (reference `while_not_sync_standby`). The node publishes
 * `nosync` and waits up to 2 loop_waits for `/sync` to drop it. Only a hint: a DCS failure or the
 * deadline ends the wait, and `work` runs anyway.
 */
export async function whileNotSyncStandby<T>(node: NodeActors, work: () => Promise<T>): Promise<T> {
  const { dcs, clock, logger } = node.deps;
  const isSyncStandby = (sync = node.cluster?.sync?.value, leader = node.cluster?.leader?.value) =>
    Boolean(leader) && sync?.leader === leader && syncNames(sync, node.name);
  if (node.lock.held || node.dynamic.synchronous_mode === 'off' || isNoSync(node.tags)) return work();
  // A fresh read: the leader may have named this node since the last cycle.
  const current = await dcs.read().catch(() => node.cluster);
  if (!isSyncStandby(current?.sync?.value, current?.leader?.value)) return work();
  node.remember({ type: 'LEAVING_SYNC_STARTED' });
  try {
    await dcs.touchMember(memberKeyOf(node));
    const deadline = clock.monotonic() + 2 * node.dynamic.loop_wait * 1000;
    for (;;) {
      const cluster = await dcs.read();
      if (!isSyncStandby(cluster.sync?.value, cluster.leader?.value)) break;
      if (clock.monotonic() >= deadline) {
        logger.warning('the primary did not release this node from synchronous standby in time; going on');
        break;
      }
      logger.info('Waiting for primary to release us from synchronous standby');
      await sleep(clock, POLL_MS);
    }
  } catch (error) {
    logger.warning(`Could not get cluster state, skipping synchronous standby disable: ${errorText(error)}`);
  }
  try {
    return await work();
  } finally {
    node.remember({ type: 'LEAVING_SYNC_ENDED' });
  }
}
