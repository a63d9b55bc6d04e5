import { errorText } from '../common/error-text';
import { ClusterView } from '../dcs/dcs.port';
import { DynamicConfigApplier } from './dynamic-config-apply';
import { describeAgent } from './member-agents';
import { NodeActors } from './node-actors';

/**
 * The HA cycle's reading of the DCS: the cluster as it shows it (null and the error when it does not answer),
 * with what follows at once from it: the dynamic configuration in force and its cached copy, the members seen,
 * a lock this node no longer holds, the `/failsafe` members known.
 */
export async function readCluster(
  node: NodeActors,
  dynamicConfig: DynamicConfigApplier,
): Promise<{ cluster: ClusterView | null; dcsError: string | null }> {
  const { dcs, clock } = node.deps;
  let cluster: ClusterView | null = null;
  let dcsError: string | null = null;
  try {
    // From the watch's cache while it is live and current, as the reference reads (no request); a
    // lock holder that does not find itself there confirms against the store before it gives the
    // lock up: a watch may trail this node's own acquisition.
    const cached = await dcs.readCached();
    cluster = node.lock.held && cached.leader?.value !== node.name ? await dcs.read() : cached;
    node.observeCluster(cluster, clock.monotonic());
    node.sightings.see(cluster, clock.now());
    for (const change of node.agents.see(cluster))
      node.events.recordCluster('member.agent_seen', `${change.member}'s key written by ${describeAgent(change)}`, {
        ...change,
      });
  } catch (error) {
    dcsError = errorText(error);
  }
  // Without a DCS answer the last configuration read stays in force (failsafe mode set through /config included).
  if (cluster) {
    await dynamicConfig.apply(node, cluster.config);
    const dataDirReady = node.busy === null && (node.isPostmasterUp() || node.dataDir?.state === 'initialized');
    await node.configCache.keep(cluster.config?.value ?? null, node.config.bootstrap.dcs, dataDirReady);
  }

  // Without a DCS answer the lock cannot be confirmed, so it is given up, as the reference does,
  // unless failsafe mode may keep this leader (decide() asks the members first).
  const failsafeMayHold = !cluster && node.dynamic.failsafe_mode && node.sampler.sample?.inRecovery === false;
  if (node.lock.held && (cluster ? cluster.leader?.value !== node.name : !failsafeMayHold)) {
    node.lock.lost(
      cluster ? `leader key is now ${cluster.leader?.value ?? 'absent'}` : `DCS is not accessible: ${dcsError}`,
    );
  }
  if (cluster) {
    node.failsafe.leaderEnded();
    node.remember({ type: 'FAILSAFE_MEMBERS_KNOWN', members: cluster.failsafe?.value ?? null });
  }
  return { cluster, dcsError };
}
