import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { SitesLab } from '../../scripts/lib/sites-lab';
import { RecordedEvent } from '../../src/events/event';
import { readSyncKey } from './sync-key';
import { waitFor } from './wait-for';

/** The steps the cut-off-site specs share (site-partitions*.int-spec.ts): a Stator cluster in a SitesLab. */

/** The node's events on `stream` since `since` (epoch ms), oldest first. */
export async function eventsOf(node: LocalNode, stream: string, since: number): Promise<RecordedEvent[]> {
  const query = new URLSearchParams({ stream, since: new Date(since).toISOString(), limit: '1000' });
  const response = await fetch(`${node.apiUrl}/events?${query.toString()}`, { signal: AbortSignal.timeout(5000) });
  return (await response.json()) as RecordedEvent[];
}

/** The tasks (`clone`, `rejoin`, `demote`...) `node` started since `since` (epoch ms). */
export async function tasksSince(node: LocalNode, since: number): Promise<string[]> {
  return (await eventsOf(node, `node/${node.name}/task`, since))
    .filter((event) => event.cause === 'TASK_STARTED')
    .map((event) => (event.data?.event as { task?: string }).task ?? '?');
}

/**
 * Until `/sync` names every standby of `leader`: right after a promotion it names none (the new leader's commits are
 * asynchronous until its standbys confirm), and a site cut off then leaves nobody who may take over.
 */
export async function waitForEveryStandbySynchronous(cluster: LocalCluster, leader: LocalNode): Promise<void> {
  const standbys = cluster.nodes.length - 1;
  await waitFor(
    async () => {
      const sync = await readSyncKey(cluster);
      return sync?.leader === leader.name && sync.sync_standby?.split(',').length === standbys;
    },
    { timeoutMs: 30_000, description: `/sync naming the ${standbys} standbys of ${leader.name}` },
  );
}

/**
 * A switchover to `site`, retried until the leader takes it (it refuses while /sync names nobody there yet); returns
 * the leader, in `site`, once every standby streams and is synchronous.
 */
export async function switchoverTo(cluster: LocalCluster, sites: SitesLab, site: string): Promise<LocalNode> {
  const leader = await cluster.waitForHealthy(60_000);
  if (sites.siteOf(leader.index) === site) {
    await waitForEveryStandbySynchronous(cluster, leader);
    return leader;
  }
  await waitFor(
    async () => {
      const response = await fetch(`${leader.apiUrl}/switchover`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ leader: leader.name, site }),
      });
      return response.status === 200;
    },
    { timeoutMs: 30_000, intervalMs: 1000, description: `a switchover from ${leader.name} to ${site}` },
  );
  const after = await cluster.waitForHealthy(60_000);
  if (sites.siteOf(after.index) !== site) throw new Error(`the switchover to ${site} ended with ${after.name} leading`);
  await waitForEveryStandbySynchronous(cluster, after);
  return after;
}
