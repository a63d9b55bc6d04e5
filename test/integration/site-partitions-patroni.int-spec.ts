import { SitesLab } from '../../scripts/lib/sites-lab';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { PatroniNetnsCluster, PatroniNetnsNode } from '../helpers/patroni-netns-cluster';
import { readSyncKey } from '../helpers/sync-key';
import { waitFor } from '../helpers/wait-for';
import { WriteCheck } from '../helpers/write-check';

/**
 * Patroni 3.0.2 (Debian's) in the bed of site-partitions.int-spec.ts, for docs/sites.md's side by side (issue 36):
 * dc1 holds node1, node2 and etcd members e1 and e2 (the majority), dc2 node3 and e3; 20 ms one way between the
 * sites from once the replicas are cloned until the last heal; ttl 10, loop_wait 2, retry_timeout 4,
 * `synchronous_mode: true`, `synchronous_node_count: 2` (each commit waits for both standbys, as Stator's scenarios
 * with `synchronous_site_count: 1` do), wal_sender_timeout and wal_receiver_timeout 5 s; the same write checker.
 * Patroni has no `site`: the failover goes to whichever synchronous standby wins the race for the leader key.
 * The tests' names say what Patroni was expected to do (reasoned from its code); the figures printed at the end are
 * what it did. Run apart: `npm run partitions:patroni` (root; network namespaces, so under the cluster lock).
 */
jest.setTimeout(600_000);

const TTL = 10;
const LOOP_WAIT = 2;
const LATENCY_MS = 20;
/** How many times the dc1 leader is killed, to see where Patroni's new leader lands. */
const FAILOVER_ROUNDS = Number(process.env.STATOR_PATRONI_FAILOVER_ROUNDS ?? 4);

let sites: SitesLab;
let cluster: PatroniNetnsCluster;
let baseDir: string;
const writes = new WriteCheck();
const figures: string[] = [];

const now = () => writes.now();
const siteOf = (node: PatroniNetnsNode) => sites.siteOf(node.index);

async function expectNoLostWrite(leader: PatroniNetnsNode): Promise<void> {
  expect(await writes.missingOn(leader)).toEqual([]);
  expect(writes.twoWriterIntervals()).toEqual([]);
}

/** Until `/sync` names both standbys of `leader` (Patroni's `synchronous_node_count: 2`). */
async function waitForBothStandbysSynchronous(leader: PatroniNetnsNode): Promise<void> {
  await waitFor(
    async () => {
      const sync = await readSyncKey(cluster);
      return sync?.leader === leader.name && sync.sync_standby?.split(',').length === 2;
    },
    { timeoutMs: 30_000, description: `/sync naming both standbys of ${leader.name}` },
  );
}

/** A switchover to a synchronous standby of `site` (Patroni 3.0.2 takes a `candidate`, not a site). */
async function switchoverTo(site: string): Promise<PatroniNetnsNode> {
  const leader = await cluster.waitForHealthy(90_000);
  await waitForBothStandbysSynchronous(leader);
  if (siteOf(leader) === site) return leader;
  const candidate = cluster.nodes.find((node) => node !== leader && siteOf(node) === site)!;
  await waitFor(
    async () => {
      const response = await fetch(`${leader.apiUrl}/switchover`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ leader: leader.name, candidate: candidate.name }),
        signal: AbortSignal.timeout(30_000),
      });
      return response.status === 200;
    },
    { timeoutMs: 60_000, intervalMs: 1000, description: `a switchover from ${leader.name} to ${candidate.name}` },
  );
  const after = await cluster.waitForHealthy(90_000);
  expect(after.name).toBe(candidate.name);
  await waitForBothStandbysSynchronous(after);
  return after;
}

/**
 * The lines of `node`'s log since `offset` that tell what it did (demoted, rewound, cloned, removed its data
 * directory), each once, without their time.
 */
function howItCameBack(node: PatroniNetnsNode, offset: number): string[] {
  const lines = node
    .logSince(offset)
    .filter((line) => /demot|not accessible|rewind|basebackup|bootstrap|remov|reinit|clone/i.test(line))
    .map((line) => line.replace(/^\S+ \S+ /, ''));
  return [...new Set(lines)];
}

describe('Patroni 3.0.2 in the sites bed (dc1: node1, node2, e1, e2; dc2: node3, e3; 20 ms between them; synchronous_mode, synchronous_node_count 2)', () => {
  beforeAll(async () => {
    baseDir = tmpDir('stator-sites-patroni-');
    sites = await SitesLab.create(baseDir, [
      { name: 'dc1', nodes: [1, 2], etcd: [1, 2] },
      { name: 'dc2', nodes: [3], etcd: [3] },
    ]);
    cluster = PatroniNetnsCluster.start({
      nodes: 3,
      baseDir,
      network: sites.network(),
      timing: { ttl: TTL, loopWait: LOOP_WAIT, retryTimeout: 4 },
      dcs: {
        synchronous_mode: true,
        synchronous_node_count: 2,
        postgresql: { parameters: { wal_sender_timeout: '5s', wal_receiver_timeout: '5s' } },
      },
    });
    await cluster.waitForHealthy(120_000);
    // After the clones: see delayBetweenSites.
    await sites.delayBetweenSites(LATENCY_MS);
    await writes.start(cluster, await cluster.waitForHealthy(30_000));
  });

  afterAll(async () => {
    await writes.stop();
    await cluster?.stop();
    sites?.destroy();
    if (figures.length)
      console.log(
        `Patroni 3.0.2 in the sites bed, ${writes.acknowledged.length} acknowledged writes in ${Math.round(now() / 1000)} s:\n${figures.join('\n')}`,
      );
    if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
  });

  it(`(e) kill -9 of the dc1 leader's agent and postmaster, ${FAILOVER_ROUNDS} times: a synchronous standby of either site leads once the leader key expires (ttl), no acknowledged write lost`, async () => {
    const landed: string[] = [];
    for (let round = 1; round <= FAILOVER_ROUNDS; round++) {
      const leader = await switchoverTo('dc1');
      const killedAt = now();
      await leader.killAgentAndPostmaster();
      const newLeader = await cluster.waitForLeader(60_000, [leader.name]);
      const ledAt = now();
      const lost = await writes.missingOn(newLeader);
      landed.push(siteOf(newLeader));
      figures.push(
        `(e) round ${round}: kill -9 of ${leader.name} (dc1): ${newLeader.name} (${siteOf(newLeader)}) answered as primary ${Math.round(ledAt - killedAt)} ms later; ${lost.length} acknowledged writes missing on it`,
      );
      expect(lost).toEqual([]);
      const offset = leader.logSize();
      // A rewind from the other site is more than the delayer carries (see delayBetweenSites): it stalled for minutes.
      const acrossSites = siteOf(newLeader) !== siteOf(leader);
      if (acrossSites) sites.stopDelaying();
      leader.start();
      expect((await cluster.waitForHealthy(120_000)).name).toBe(newLeader.name);
      if (acrossSites) await sites.delayBetweenSites(LATENCY_MS);
      figures.push(
        `(e) round ${round}: ${leader.name} back: ${howItCameBack(leader, offset).join(' | ') || 'no rewind or clone logged'}`,
      );
    }
    figures.push(`(e) new leaders' sites: ${landed.join(', ')}`);
    expect(writes.twoWriterIntervals()).toEqual([]);
  });

  it('(b, c) dc1 cut off while it holds the leader and 2 of 3 etcd members, for 2 × ttl: the leader keeps its lock and, once wal_sender_timeout drops node3, its writes; node3 in dc2 never promotes', async () => {
    const leader = await switchoverTo('dc1');
    const node3 = cluster.node('node3');
    const cutAt = now();
    sites.cutOff('dc1');
    const node3Primary: number[] = [];
    try {
      await waitFor(
        async () => {
          if ((await node3.healthCode('/primary')) === 200) node3Primary.push(now());
          return now() - cutAt >= 2 * TTL * 1000;
        },
        { timeoutMs: 2 * TTL * 1000 + 5000, intervalMs: 250, description: '2 × ttl of dc1 cut off' },
      );
      expect(node3Primary).toEqual([]);
      expect(await leader.healthCode('/primary')).toBe(200);
    } finally {
      sites.reconnect('dc1');
    }
    const during = writes.between(cutAt, now());
    const gap = writes.longestGap(cutAt, now());
    const sync = await readSyncKey(cluster);
    figures.push(
      `(b, c) dc1 cut off for ${2 * TTL} s: ${during.length} writes acknowledged by ${[...new Set(during.map((ack) => ack.node))].join(', ') || 'nobody'}, longest gap ${Math.round(gap)} ms; node3 never primary; /sync after: ${JSON.stringify(sync)}`,
    );
    expect(new Set(during.map((ack) => ack.node))).toEqual(new Set([leader.name]));
    expect((await cluster.waitForHealthy(90_000)).name).toBe(leader.name);
    await expectNoLostWrite(leader);
  });

  it('(a, d) dc2 cut off while it holds the leader but 1 of 3 etcd members: node3 stops acknowledging writes (its commits wait for both standbys), demotes after retry_timeout, dc1 promotes after ttl, 0 writes lost; the heal: node3 rewinds', async () => {
    const oldLeader = await switchoverTo('dc2');
    const inode = oldLeader.pgVersionInode();
    await waitFor(() => writes.acknowledged.some((ack) => ack.node === oldLeader.name), {
      timeoutMs: 10_000,
      description: `writes on ${oldLeader.name}`,
    });
    const offset = oldLeader.logSize();
    const cutAt = now();
    sites.cutOff('dc2');
    let newLeader: PatroniNetnsNode;
    try {
      const dc1 = cluster.nodes.filter((node) => siteOf(node) === 'dc1');
      const stoppedAt = writes.firstTime(
        async () => (await oldLeader.healthCode('/primary')) !== 200,
        4 * TTL * 1000,
        `${oldLeader.name} no longer primary`,
      );
      const promotedAt = writes.firstTime(
        async () => (await Promise.all(dc1.map((node) => node.healthCode('/primary')))).includes(200),
        4 * TTL * 1000,
        'a dc1 node primary',
      );
      const [stopped, promoted] = await Promise.all([stoppedAt, promotedAt]);
      newLeader = await cluster.waitForLeader(10_000, [oldLeader.name]);
      const afterCut = writes.between(cutAt, Infinity, oldLeader.name);
      const lastOld = Math.max(...afterCut.map((ack) => ack.at), cutAt);
      const firstNew = Math.min(...writes.between(cutAt, Infinity, newLeader.name).map((ack) => ack.at), Infinity);
      figures.push(
        `(a) dc2 cut off with the leader: ${oldLeader.name} acknowledged ${afterCut.length} writes after the cut (the last at ${Math.round(lastOld - cutAt)} ms) and left primary at ${Math.round(stopped - cutAt)} ms; ` +
          `${newLeader.name} (dc1) primary at ${Math.round(promoted - cutAt)} ms`,
      );
      expect(stopped).toBeLessThan(promoted);
      expect(afterCut.filter((ack) => ack.at >= firstNew)).toEqual([]);
    } finally {
      // node3 rewinds from the new leader across the sites: more than the delayer can carry (see delayBetweenSites).
      sites.stopDelaying();
      sites.reconnect('dc2');
    }
    const healedAt = now();

    // (d) How node3 comes back: pg_rewind (the same data directory) or a new clone.
    expect((await cluster.waitForHealthy(120_000)).name).toBe(newLeader!.name);
    const sameDirectory = oldLeader.pgVersionInode() === inode;
    figures.push(
      `(d) after the heal, ${oldLeader.name} streamed from ${newLeader!.name} ${Math.round(now() - healedAt)} ms later; ` +
        `${sameDirectory ? 'same' : 'a new'} data directory; since the cut it logged: ${howItCameBack(oldLeader, offset).join(' | ')}`,
    );
    expect(sameDirectory).toBe(true);
    await expectNoLostWrite(newLeader!);
  });
});
