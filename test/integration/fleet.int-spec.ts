import { spawnSync } from 'node:child_process';
import { chmodSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { RecordedEvent } from '../../src/events/event';
import { EtcdCluster, startEtcdCluster } from '../../scripts/lib/etcd-cluster';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { etcdLoad, scrapeEtcd } from '../../bench/lib/etcd-metrics';

/**
 * A fleet on one etcd (issue 35, part 6): three 3-node clusters against one 3-member etcd cluster, as a platform team
 * runs them: two scopes under `/service`, and the first scope again under `/staging` (a cluster is its namespace and
 * scope together, as in Patroni). One cluster fails over (kill -9 of its leader's agent and postmaster); the others
 * keep their leaders, and each cluster's event log and /history hold its own nodes only.
 * Nine PostgreSQL servers and agents: 30-70 s on a shared 2-core machine, most of it their start.
 */
const TTL = 10;
const LOOP_WAIT = 2;
const RETRY_TIMEOUT = 4;
/** Node names of their own per cluster (`a1`, `b2`...), so an event in the wrong cluster's log names a stranger. */
const FLEET = [
  { namespace: '/service', scope: 'fleet-a', nodePrefix: 'a' },
  { namespace: '/service', scope: 'fleet-b', nodePrefix: 'b' },
  { namespace: '/staging', scope: 'fleet-a', nodePrefix: 'c' },
] as const;

jest.setTimeout(180_000);

let etcd: EtcdCluster;
let baseDir: string;
let fleet: LocalCluster[];
const measured: Record<string, unknown> = {};

beforeAll(async () => {
  const started = Date.now();
  baseDir = tmpDir('stator-fleet-');
  chmodSync(baseDir, 0o755); // PostgreSQL runs as its own OS user, which must reach each cluster's directory
  // etcd's production heartbeat and election timeouts, as a fleet's etcd runs (the tests' short ones make elections
  // likelier on a loaded machine; the idle window counts them).
  etcd = await startEtcdCluster({ members: 3, productionTimeouts: true });
  fleet = await Promise.all(
    FLEET.map(({ namespace, scope, nodePrefix }) =>
      LocalCluster.start({
        nodes: 3,
        baseDir: join(baseDir, nodePrefix),
        namespace,
        scope,
        nodeName: (index) => `${nodePrefix}${index}`,
        sharedEtcd: etcd.handle,
        etcd3: { hosts: etcd.endpoints },
        ttl: TTL,
        loopWait: LOOP_WAIT,
        retryTimeout: RETRY_TIMEOUT,
      }),
    ),
  );
  await Promise.all(fleet.map((cluster) => cluster.waitForHealthy(120_000)));
  measured.fleetHealthyMs = Date.now() - started;
});

afterAll(async () => {
  await Promise.all((fleet ?? []).map((cluster) => cluster.stop()));
  await etcd?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
  console.log(`measured: ${JSON.stringify(measured)}`);
});

async function etcdRange(key: string): Promise<string | null> {
  // Any member: they serve the same linearizable read.
  const member = etcd.endpoints[Math.floor(Math.random() * etcd.endpoints.length)];
  const response = await fetch(`http://${member}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: Buffer.from(key).toString('base64') }),
    signal: AbortSignal.timeout(1000),
  });
  const body = (await response.json()) as { kvs?: Array<{ value: string }> };
  return body.kvs?.[0] ? Buffer.from(body.kvs[0].value, 'base64').toString() : null;
}

const leaderKeyOf = (cluster: LocalCluster) =>
  etcdRange(`${FLEET[fleet.indexOf(cluster)].namespace}/${cluster.scope}/leader`);
/** The cluster's namespace and scope, which name it (two clusters share a scope). */
const nameOf = (cluster: LocalCluster) => `${FLEET[fleet.indexOf(cluster)].namespace}/${cluster.scope}`;

/** Every event the node's `GET /events` serves (one page: the fleet's logs are far below its 10,000). */
async function eventsServedBy(node: LocalNode): Promise<RecordedEvent[]> {
  const response = await fetch(`${node.apiUrl}/events?limit=10000`, { signal: AbortSignal.timeout(5000) });
  expect(response.status).toBe(200);
  expect(response.headers.get('link')).toBeNull();
  return (await response.json()) as RecordedEvent[];
}

async function historyServedBy(node: LocalNode): Promise<unknown[][]> {
  const response = await fetch(`${node.apiUrl}/history`, { signal: AbortSignal.timeout(5000) });
  expect(response.status).toBe(200);
  return (await response.json()) as unknown[][];
}

async function timelineOf(node: LocalNode): Promise<unknown> {
  return (await node.status())?.timeline;
}

/**
 * Reads the leader keys of `clusters` every 100 ms until stopped: every holder seen, per cluster. A read etcd does
 * not answer in time is no sighting (the fleet's etcd is busy during a failover), so the count of sightings is kept.
 */
function watchLeaders(clusters: LocalCluster[]) {
  const holders = new Map(clusters.map((cluster) => [cluster, new Set<string | null>()]));
  let sightings = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      await Promise.all(
        clusters.map(async (cluster) => {
          const holder = await leaderKeyOf(cluster).catch(() => undefined);
          if (holder === undefined) return;
          holders.get(cluster)!.add(holder);
          sightings++;
        }),
      );
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return { holders, sightings };
    },
  };
}

/** The size of every node's log, to read what it wrote from then on. */
const logSizes = () =>
  new Map(fleet.flatMap((cluster) => cluster.nodes).map((node) => [node, statSync(node.logPath).size]));

/** The warnings and errors the nodes logged since `marks` (at most 20). */
function warningsSince(marks: Map<LocalNode, number>): string[] {
  const lines = [...marks].flatMap(([node, size]) =>
    readFileSync(node.logPath)
      .subarray(size)
      .toString()
      .split('\n')
      .filter((line) => / (WARNING|ERROR): /.test(line))
      .map((line) => `${node.name} ${line}`),
  );
  return lines.slice(0, 20);
}

/** Nine agents, each with one watch of its cluster's keys and one of its event log. */
const AGENTS = FLEET.length * 3;
/** The idle window the load test counts etcd's requests over: 15 loop_waits. */
const IDLE_WINDOW_MS = 15 * LOOP_WAIT * 1000;

describe('three clusters sharing one 3-member etcd, two of them one scope in two namespaces', () => {
  it('costs etcd, idle, no more than the design allows: no range each cycle, no txn, no watch restarted, a keepalive a cycle per node at most', async () => {
    // Settled: every node's latest transitions are stored (their appends are txns) before the window opens.
    await waitFor(
      async () => {
        const before = await scrapeEtcd(etcd.endpoints);
        await new Promise((resolve) => setTimeout(resolve, 3 * LOOP_WAIT * 1000));
        return (etcdLoad(before, await scrapeEtcd(etcd.endpoints)).requestsPerSecond.Txn ?? 0) === 0;
      },
      { timeoutMs: 60_000, intervalMs: 0, description: 'three loop_waits without a txn' },
    );
    const logMarks = logSizes();
    const before = await scrapeEtcd(etcd.endpoints);
    await new Promise((resolve) => setTimeout(resolve, IDLE_WINDOW_MS));
    const load = etcdLoad(before, await scrapeEtcd(etcd.endpoints));
    measured.idleEtcdElections = load.leaderChanges;
    const count = (kind: string) => Math.round((load.requestsPerSecond[kind] ?? 0) * load.seconds);
    const cycles = load.seconds / LOOP_WAIT;
    const requests = Object.fromEntries(
      ['Range', 'Txn', 'Put', 'LeaseKeepAlive', 'Watch'].map((kind) => [kind, count(kind)]),
    );
    measured.idleRequests = requests;
    // What the agents complained of in the window (a request etcd did not answer in time distrusts the watch's cache).
    measured.idleWarnings = warningsSince(logMarks);
    measured.idleBytesOutPerAgentPerMinute = Math.round((load.bytesOutPerSecond * 60) / AGENTS);
    // Each node reads its cluster from its watch; it confirms the cache at most every 10 ttls (100 s here, so once in
    // the window), with two ranges that read no value (ClusterWatch.confirmUnchanged).
    expect(requests.Range).toBeLessThanOrEqual(2 * AGENTS);
    // An idle cluster records no event and its leader refreshes without a compare.
    expect(requests.Txn).toBe(0);
    // Both watches of every node are held, none restarted.
    expect(requests.Watch).toBe(0);
    expect(load.watchers).toBe(2 * AGENTS);
    // A leader keeps its lease alive every cycle, a replica whenever its last keepalive is a third of the ttl old.
    expect(requests.LeaseKeepAlive).toBeLessThanOrEqual(Math.ceil(cycles + 1) * AGENTS);
    // A member key and /status are written only when their values change (a WAL position moved): a node that
    // rewrote its unchanged key every cycle would send one put a cycle, twice this ceiling.
    expect(requests.Put).toBeLessThan((cycles * AGENTS) / 2);
  });

  let failedOverAt = 0;
  let oldLeaderOfA: LocalNode;
  let newLeaderOfA: LocalNode;
  const historyBefore = new Map<LocalCluster, unknown[][]>();

  it("fails one cluster over without moving the other clusters' leaders", async () => {
    const [a, ...others] = fleet;
    const leaders = await Promise.all(fleet.map((cluster) => cluster.waitForLeader(10_000)));
    oldLeaderOfA = leaders[0];
    const otherLeaders = leaders.slice(1);
    for (const [index, cluster] of fleet.entries()) {
      expect(await leaderKeyOf(cluster)).toBe(leaders[index].name);
      historyBefore.set(cluster, await historyServedBy(leaders[index]));
    }
    const timelinesBefore = await Promise.all(otherLeaders.map(timelineOf));

    const watch = watchLeaders(others);
    failedOverAt = Date.now();
    const postmaster = oldLeaderOfA.postmasterPid()!;
    await oldLeaderOfA.killAgent();
    process.kill(postmaster, 'SIGKILL');
    newLeaderOfA = await a.waitForLeader((TTL + 20) * 1000, [oldLeaderOfA.name]);
    measured.failoverMs = Date.now() - failedOverAt;
    // The others keep being watched while the new leader settles in (its first cycles write the most to etcd).
    await waitFor(async () => (await leaderKeyOf(a)) === newLeaderOfA.name, {
      timeoutMs: 10_000,
      description: `${nameOf(a)}'s leader key names ${newLeaderOfA.name}`,
    });
    await new Promise((resolve) => setTimeout(resolve, 2 * LOOP_WAIT * 1000));
    const { holders, sightings } = await watch.stop();

    expect(a.nodes.map((node) => node.name)).toContain(newLeaderOfA.name);
    expect(sightings).toBeGreaterThan(20);
    for (const [index, cluster] of others.entries()) {
      expect([...holders.get(cluster)!]).toEqual([otherLeaders[index].name]);
      expect(await cluster.primaries()).toEqual([otherLeaders[index].name]);
    }
    expect(await Promise.all(otherLeaders.map(timelineOf))).toEqual(timelinesBefore);
  });

  it("keeps the three event logs and /history apart: no event of one cluster's nodes in another's log", async () => {
    expect(newLeaderOfA).toBeDefined();
    const [a, ...others] = fleet;
    const served = new Map<LocalCluster, RecordedEvent[]>();
    for (const cluster of fleet) {
      const node = cluster === a ? newLeaderOfA : await cluster.waitForLeader(10_000);
      served.set(cluster, await eventsServedBy(node));
    }
    for (const cluster of fleet) {
      const events = served.get(cluster)!;
      const names = new Set(cluster.nodes.map((node) => node.name));
      expect(events.length).toBeGreaterThan(10);
      expect([...new Set(events.map((event) => event.node))].filter((name) => !names.has(name))).toEqual([]);
    }

    // The failover is in a's log, and in no other.
    const acquiredSince = (cluster: LocalCluster) =>
      served.get(cluster)!.filter((event) => event.type === 'leader.acquired' && Date.parse(event.at) >= failedOverAt);
    expect(acquiredSince(a).map((event) => event.node)).toContain(newLeaderOfA.name);
    for (const cluster of others) expect(acquiredSince(cluster)).toEqual([]);

    // a's /history gains the new timeline, led by its new leader; the others' stay as they were.
    const historyOfA = await waitFor(
      async () => {
        const history = await historyServedBy(newLeaderOfA);
        return history.length > historyBefore.get(a)!.length ? history : null;
      },
      { timeoutMs: 20_000, description: `a timeline switch in ${nameOf(a)}'s /history` },
    );
    expect(historyOfA.at(-1)?.[4]).toBe(newLeaderOfA.name);
    for (const cluster of others) {
      expect(await historyServedBy(await cluster.waitForLeader(10_000))).toEqual(historyBefore.get(cluster));
    }
  });

  it('`stator audit export` reads the log of the scope in the namespace it is given (`/service` without --namespace)', () => {
    const exportOf = (...namespace: string[]) => {
      const run = spawnSync(
        process.execPath,
        ['bin/stator.js', 'audit', 'export', '--etcd', etcd.endpoints.join(','), '--scope', 'fleet-a', ...namespace],
        {
          cwd: join(__dirname, '..', '..'),
          encoding: 'utf8',
          timeout: 60_000,
        },
      );
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      return new Set(
        run.stdout
          .trim()
          .split('\n')
          .map((line) => (JSON.parse(line) as RecordedEvent).node),
      );
    };
    expect([...exportOf()].sort()).toEqual(['a1', 'a2', 'a3']);
    expect([...exportOf('--namespace', '/staging')].sort()).toEqual(['c1', 'c2', 'c3']);
  });
});
