import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { SitesLab } from '../../scripts/lib/sites-lab';
import { RecordedEvent } from '../../src/events/event';
import { readSyncKey } from './sync-key';
import { waitFor } from './wait-for';
import { WriteCheck } from './write-check';

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

/** A POST to etcd's JSON gateway at `host` (`address:port`), answered within 1 s. */
async function etcdGateway<T>(host: string, path: string, body: unknown): Promise<T> {
  const response = await fetch(`http://${host}/v3/${path}`, {
    method: 'POST',
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(1000),
  });
  if (!response.ok) throw new Error(`etcd ${host} ${path}: ${response.status}`);
  return (await response.json()) as T;
}

/** Before a cut: every etcd member's id (the order of `hosts`) and which one leads (index from 1 in `hosts`). */
export async function etcdLeadership(hosts: string[]): Promise<{ ids: string[]; leader: number }> {
  const ids = await Promise.all(
    hosts.map(async (host) => {
      const status = await etcdGateway<{ header: { member_id: string } }>(host, 'maintenance/status', {});
      return status.header.member_id;
    }),
  );
  return { ids, leader: ids.indexOf((await etcdLeaderId(hosts[0])) ?? '') + 1 };
}

/**
 * After a site is cut off: when (the write checker's clock) etcd's member at `majorityHost`, on the side that keeps the
 * majority, knows a leader outside the cut site (at once if it already had one), and when the leader key read there
 * stops naming `oldLeader`. When etcd's leader was cut off, its successor renews every lease on taking over (etcd's
 * lessor promotion: ttl plus an election timeout), so the old leader's key outlives the cut by that much more.
 */
export async function etcdAfterCut(
  writes: WriteCheck,
  options: {
    ids: string[];
    cutMembers: number[];
    majorityHost: string;
    scope: string;
    oldLeader: string;
    timeoutMs: number;
  },
): Promise<{ leaderOutsideAt: number; keyGoneAt: number }> {
  const cutIds = [null, ...options.cutMembers.map((member) => options.ids[member - 1])];
  const [leaderOutsideAt, keyGoneAt] = await Promise.all([
    writes.firstTime(
      async () => !cutIds.includes(await etcdLeaderId(options.majorityHost).catch(() => null)),
      options.timeoutMs,
      'an etcd leader outside the cut site',
    ),
    writes.firstTime(
      async () =>
        (await leaderKeyHolder(options.majorityHost, options.scope).catch(() => options.oldLeader)) !==
        options.oldLeader,
      options.timeoutMs,
      `${options.oldLeader}'s leader key gone from etcd`,
    ),
  ]);
  return { leaderOutsideAt, keyGoneAt };
}

/** etcd's `--election-timeout` in the network-namespace bed (scripts/lib/netns-lab.ts). */
export const ETCD_ELECTION_TIMEOUT_MS = 1000;

/**
 * Until when (ms after the cut) the old leader's key may live on in etcd: a ttl after its last renewal, which came before
 * the cut; or, when etcd's leader was in the cut site, a ttl plus an election timeout after the majority side's new
 * etcd leader took over (`leaderOutsideAt`, ms after the cut), since it renews every lease then. Plus 1.5 s: etcd looks
 * for expired leases every 500 ms, and the reading is polled.
 */
export function oldKeyLifetimeBound(ttlSeconds: number, etcdLeaderWasCut: boolean, leaderOutsideAt: number): number {
  const from = etcdLeaderWasCut ? leaderOutsideAt + ETCD_ELECTION_TIMEOUT_MS : 0;
  return from + ttlSeconds * 1000 + 1500;
}

/** The member id of etcd's leader as the member at `host` knows it; null when it knows none. */
async function etcdLeaderId(host: string): Promise<string | null> {
  const status = await etcdGateway<{ leader?: string }>(host, 'maintenance/status', {});
  return status.leader && status.leader !== '0' ? status.leader : null;
}

/** Who holds `/service/<scope>/leader`, read through `host` (a linearizable read: fails where etcd has no majority). */
async function leaderKeyHolder(host: string, scope: string): Promise<string | null> {
  const key = Buffer.from(`/service/${scope}/leader`).toString('base64');
  const value = (await etcdGateway<{ kvs?: { value: string }[] }>(host, 'kv/range', { key })).kvs?.[0]?.value;
  return value ? Buffer.from(value, 'base64').toString() : null;
}
