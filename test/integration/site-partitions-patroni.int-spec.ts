import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
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
 * Patroni is the reference here: the tests assert only what it did in every run (read from its logs), and the figures
 * printed at the end record the rest, for docs/sites.md's side by side (the heal, (d), differs from run to run).
 * Run apart: `npm run partitions:patroni` (root; network namespaces, so under the cluster lock).
 */
jest.setTimeout(600_000);

const TTL = 10;
const LOOP_WAIT = 2;
const LATENCY_MS = 20;
/** How many times the dc1 leader is killed, to see where Patroni's new leader lands. */
const FAILOVER_ROUNDS = Number(process.env.STATOR_PATRONI_FAILOVER_ROUNDS ?? 4);
/** How long (d) waits after the heal for one leader with every other node streaming from it. */
const HEAL_OBSERVATION_MS = 60_000;

let sites: SitesLab;
let cluster: PatroniNetnsCluster;
let baseDir: string;
const writes = new WriteCheck();
const figures: string[] = [];
/** What (a) leaves for (d): the cut of dc2 and what it led to. */
const dc2Cut = {
  cutAt: 0,
  healedAt: 0,
  inode: 0,
  logOffsets: new Map<string, number>(),
  watch: null as ClusterWatch | null,
  newLeader: null as PatroniNetnsNode | null,
};

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
    .filter((line) =>
      /demot|not accessible|rewind|basebackup|bootstrap|remov|reinit|clone|promot|leader lock|prev-link/i.test(line),
    )
    .map((line) => line.replace(/^\S+ \S+ /, ''));
  return [...new Set(lines)];
}

/** Whether `node`'s PostgreSQL runs as a primary (`pg_is_in_recovery()` false), whatever its agent says. */
async function postgresIsPrimary(node: PatroniNetnsNode): Promise<boolean> {
  const client = new Client({ connectionString: node.connectionString(), connectionTimeoutMillis: 1000 });
  try {
    await client.connect();
    const { rows } = await client.query<{ recovery: boolean }>('SELECT pg_is_in_recovery() AS recovery');
    return rows[0].recovery === false;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Who answered 200 on `/primary` (what a load balancer follows), whose PostgreSQL ran as a primary, and who held the
 * leader key, polled every 200 ms; each change kept.
 */
class ClusterWatch {
  readonly changes: { at: number; primaries: string[]; postgresPrimaries: string[]; leaderKey: string | null }[] = [];
  private running = true;
  private readonly done: Promise<void>;

  constructor(
    private readonly watched: PatroniNetnsCluster,
    private readonly clock: () => number,
  ) {
    this.done = this.poll();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }

  /** Stretches in which two nodes answered (`api`) or ran (`postgres`) as primary at once. */
  twoPrimaries(by: 'api' | 'postgres'): { nodes: string[]; from: number; to: number }[] {
    const found: { nodes: string[]; from: number; to: number }[] = [];
    this.changes.forEach((change, i) => {
      const primaries = by === 'api' ? change.primaries : change.postgresPrimaries;
      if (primaries.length < 2) return;
      const to = this.changes[i + 1]?.at ?? this.clock();
      const last = found.at(-1);
      if (last && last.to === change.at && last.nodes.join() === primaries.join()) last.to = to;
      else found.push({ nodes: primaries, from: change.at, to });
    });
    return found;
  }

  private async poll(): Promise<void> {
    while (this.running) {
      const [primaries, postgres, leaderKey] = await Promise.all([
        this.watched.primaries(),
        Promise.all(this.watched.nodes.map(postgresIsPrimary)),
        this.watched.leaderKey().catch(() => '(etcd not answering)'),
      ]);
      const postgresPrimaries = this.watched.nodes.filter((_, i) => postgres[i]).map((node) => node.name);
      const last = this.changes.at(-1);
      if (
        !last ||
        last.leaderKey !== leaderKey ||
        last.primaries.join() !== primaries.join() ||
        last.postgresPrimaries.join() !== postgresPrimaries.join()
      )
        this.changes.push({ at: this.clock(), primaries, postgresPrimaries, leaderKey });
      await sleep(200);
    }
  }
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
    await dc2Cut.watch?.stop(); // already stopped by (d), unless (a) failed first
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

  it("(a) dc2 cut off while it holds the leader but 1 of 3 etcd members: node3 stops answering 200 on /primary (what a load balancer follows) before a dc1 node takes the key and promotes (ttl); no write of node3 after the new leader's first until the heal", async () => {
    const oldLeader = await switchoverTo('dc2');
    dc2Cut.inode = oldLeader.pgVersionInode();
    await waitFor(() => writes.acknowledged.some((ack) => ack.node === oldLeader.name), {
      timeoutMs: 10_000,
      description: `writes on ${oldLeader.name}`,
    });
    dc2Cut.logOffsets = new Map(cluster.nodes.map((node) => [node.name, node.logSize()]));
    dc2Cut.cutAt = now();
    dc2Cut.watch = new ClusterWatch(cluster, now);
    sites.cutOff('dc2');
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
      const newLeader = await cluster.waitForLeader(10_000, [oldLeader.name]);
      dc2Cut.newLeader = newLeader;
      const cutAt = dc2Cut.cutAt;
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
      dc2Cut.healedAt = now();
    }
  });

  /*
   * What Patroni 3.0.2 did here (runs of 2026-11-28, its logs read). In each run node3 took the leader key back at the
   * heal: its cycle still worked from the cluster it last read, in which it holds the key, and "updated" the lock once
   * etcd answered again. 3.0.2's etcd3 `_update_leader` grants a new lease and puts the leader key without comparing who
   * holds it (a plain put; 3.0.3 compares: patroni/patroni d98d6d0b and 1c7bf2f5), so it overwrote the new dc1 leader's
   * key; the dc1 leader demoted (`Demoting self (immediate-nolock)`) and was rewound onto node3, or could not follow at
   * all. Two ways in: node3's demotion ('offline') still running in the background at the heal (`updated leader lock
   * during demoting self because DCS is not accessible and I was a leader`, then `promoted self to leader because I had
   * the session lock`, both promotions on the same timeline number, the dc1 node stuck on `record with incorrect
   * prev-link`); or node3's cycle blocked past retry_timeout on etcd retries, so it never demoted (its PostgreSQL a
   * primary all along, `/primary` not answering) and went on as leader at the heal (`no action. I am (node3), the
   * leader with the lock`), the writes the dc1 leader had acknowledged in between lost. Since which way it goes depends
   * on timing, this test records the heal as figures (docs/sites.md) and asserts only what held in every run: it ends
   * with one leader key holder answering as primary.
   */
  it('(d) the heal after (a): who leads, how node3 and the dc1 leader come back, which acknowledged writes the final leader lacks, any time with two primaries (recorded as figures)', async () => {
    const { watch, newLeader, cutAt, healedAt, logOffsets } = dc2Cut;
    if (!watch || !newLeader) throw new Error('(a) did not run to its promotion');
    const oldLeader = cluster.node('node3');
    const healthy = await cluster.waitForHealthy(HEAL_OBSERVATION_MS).catch(() => null);
    const observedFor = now() - healedAt;
    await watch.stop();
    const at = (ms: number) => `${((ms - cutAt) / 1000).toFixed(1)} s`;
    figures.push(
      `(a, d) since the cut (the heal at ${at(healedAt)}): ${watch.changes
        .map(
          (c) =>
            `${at(c.at)} /primary ${c.primaries.join('+') || 'none'}, PostgreSQL primary ${c.postgresPrimaries.join('+') || 'none'}, key ${c.leaderKey ?? 'none'}`,
        )
        .join('; ')}`,
    );
    const node3Stopped = watch.changes.find((c) => !c.postgresPrimaries.includes(oldLeader.name));
    figures.push(
      `(a) ${oldLeader.name}'s PostgreSQL ${node3Stopped ? `stopped running as a primary at ${at(node3Stopped.at)}` : 'ran as a primary all through the cut and the heal'}`,
    );
    for (const by of ['api', 'postgres'] as const)
      for (const interval of watch.twoPrimaries(by))
        figures.push(
          `(a, d) two nodes ${by === 'api' ? 'answered 200 on /primary' : 'ran PostgreSQL as a primary'}: ${interval.nodes.join(' and ')} from ${at(interval.from)} to ${at(interval.to)}`,
        );
    figures.push(
      healthy
        ? `(d) healthy again ${Math.round(observedFor)} ms after the heal: ${healthy.name} leads, every other node streams from it`
        : `(d) not healthy ${Math.round(observedFor)} ms after the heal: ${(await nodeStates()).join('; ')}`,
    );
    for (const node of [oldLeader, newLeader])
      figures.push(
        `(d) ${node.name} since the cut: ${howItCameBack(node, logOffsets.get(node.name) ?? 0).join(' | ') || 'nothing of note'}`,
      );
    figures.push(
      `(d) ${oldLeader.name}'s data directory: ${oldLeader.pgVersionInode() === dc2Cut.inode ? 'the same' : 'a new one'}`,
    );

    const finalLeader = healthy ?? (await cluster.waitForLeader(10_000).catch(() => null));
    if (finalLeader) {
      const lost = await writes.missingOn(finalLeader);
      figures.push(
        `(d) ${lost.length} of ${writes.acknowledged.length} acknowledged writes missing on the final leader ${finalLeader.name}${lost.length ? `: ${lost.slice(0, 10).join(', ')}${lost.length > 10 ? ', ...' : ''}` : ''}`,
      );
    } else figures.push('(d) no single primary at the end: lost writes not checked');
    const twoWriters = writes.twoWriterIntervals();
    figures.push(
      `(d) intervals with two nodes acknowledging writes: ${twoWriters.map((i) => `${i.nodes.join(' and ')} ${at(i.fromMs)} to ${at(i.toMs)}`).join(', ') || 'none'}`,
    );
    // Established in every run: the heal ends with one leader key holder that answers as primary.
    const holder = await cluster.leaderKey();
    expect(holder).not.toBeNull();
    expect(await cluster.node(holder!).healthCode('/primary')).toBe(200);
  });
});

/** Each node's role, state and timeline as its `/patroni` says. */
async function nodeStates(): Promise<string[]> {
  return Promise.all(
    cluster.nodes.map(async (node) => {
      const status = await node.status();
      return status
        ? `${node.name} ${String(status.role)} ${String(status.state)} timeline ${String(status.timeline)}`
        : `${node.name} not answering`;
    }),
  );
}
