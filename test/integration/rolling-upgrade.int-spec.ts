import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { isAlive, LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { sql } from '../helpers/sql';
import { waitFor } from '../helpers/wait-for';

/**
 * A rolling upgrade of the agents on a 3-node cluster, as a Patroni user does it: `statorctl pause`, each
 * agent stopped (SIGTERM, as `systemctl restart` sends) and started on the new build, `statorctl resume`.
 * The new build here is the same code on another Node line (.ci/run installs 24 and 26 under
 * /opt/stator-node). A writer inserts into the leader every 50 ms on one connection throughout. Then the
 * same without the pause, to show what it costs: restarting the leader's agent hands the leader on. Last,
 * what a paused leader's agent that does not come back costs: its fence stops PostgreSQL at the lease's end.
 * Agents run from `dist/`: run `npm run build` first.
 */
jest.setTimeout(180_000);

const REPO_ROOT = join(__dirname, '..', '..');
const STATORCTL = join(REPO_ROOT, 'bin', 'statorctl.js');
const WRITE_EVERY_MS = 50;
/** The next row any writer inserts: both tests write into one table. */
let nextRow = 1;

let cluster: LocalCluster;
let baseDir: string;
let activeWriter: ReturnType<typeof startWriter> | null = null;
const OLD_NODE = process.execPath;
const NEW_NODE = anotherNodeLine();
const runtimeOf = (binary: string) =>
  `node ${execFileSync(binary, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim()}`;

/** A Node binary of another line than this process's, where .ci/run installs them; this one when none is there. */
function anotherNodeLine(): string {
  const arch = process.arch === 'arm64' ? 'arm64' : 'x64';
  for (const line of ['26', '24', '22']) {
    const binary = join(
      process.env.STATOR_NODE_DIR ?? '/opt/stator-node',
      line,
      'node_modules',
      `node-linux-${arch}`,
      'bin',
      'node',
    );
    if (existsSync(binary) && !process.version.startsWith(`v${line}.`)) return binary;
  }
  console.log(
    `no other Node line under /opt/stator-node (.ci/run installs them): the agents restart on ${process.version} again`,
  );
  return process.execPath;
}

beforeAll(async () => {
  baseDir = tmpDir('stator-upgrade-');
  // Patroni's default ttl: a paused leader's agent has ttl minus the fence's margin (25 s) to come back.
  cluster = await LocalCluster.start({ nodes: 3, baseDir, ttl: 30, loopWait: 2, retryTimeout: 5 });
  const leader = await cluster.waitForHealthy(90_000);
  await sql(leader, 'CREATE TABLE upgrade_writes (n int PRIMARY KEY, at timestamptz DEFAULT now())');
});

afterEach(async () => {
  await activeWriter?.stop();
});

afterAll(async () => {
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

// Every command runs asynchronously: a synchronous one would stop this process's writer while it runs.
const run = promisify(execFile);

async function statorctl(...args: string[]): Promise<string> {
  return (
    await run(process.execPath, [STATORCTL, '--api', cluster.nodes[0].apiUrl, ...args], {
      encoding: 'utf8',
      timeout: 60_000,
    })
  ).stdout;
}

async function etcdGet(key: string, ...flags: string[]): Promise<string> {
  const args = [`--endpoints=${cluster.etcd.endpoint}`, 'get', ...flags, `/service/${cluster.scope}/${key}`];
  return (await run('etcdctl', args, { env: { ...process.env, ETCDCTL_API: '3' }, encoding: 'utf8' })).stdout.trim();
}

/** The leader key as etcd holds it: who, and the revision that created it (a key deleted and taken again has a new one). */
async function leaderKey(): Promise<{ holder: string; createRevision: string } | null> {
  const out = await etcdGet('leader', '-w', 'json');
  const kv = (JSON.parse(out) as { kvs?: { value: string; create_revision: number }[] }).kvs?.[0];
  return kv ? { holder: Buffer.from(kv.value, 'base64').toString(), createRevision: String(kv.create_revision) } : null;
}

async function memberKey(node: LocalNode): Promise<Record<string, unknown> | null> {
  const out = await etcdGet(`members/${node.name}`, '--print-value-only');
  return out ? (JSON.parse(out) as Record<string, unknown>) : null;
}

/**
 * Inserts a row every 50 ms on one connection, kept for as long as it works; when it breaks, the writer
 * connects to whichever node takes writes. Each acknowledged row is remembered with when it was acknowledged.
 */
function startWriter(first: LocalNode) {
  const acknowledged: { n: number; at: number; node: string }[] = [];
  let running = true;
  let reconnects = 0;
  const connect = async (node: LocalNode) => {
    const client = new Client({
      connectionString: node.connectionString(),
      connectionTimeoutMillis: 1000,
      statement_timeout: 1000,
    });
    client.on('error', () => undefined);
    await client.connect();
    const [{ recovery }] = (await client.query<{ recovery: boolean }>('SELECT pg_is_in_recovery() AS recovery')).rows;
    if (recovery) {
      await client.end().catch(() => undefined);
      throw new Error(`${node.name} is a replica`);
    }
    return { node, client };
  };
  const done = (async () => {
    let connection: { node: LocalNode; client: Client } | null = null;
    let connectedOnce = false;
    while (running) {
      const started = performance.now();
      try {
        if (!connection && !connectedOnce) {
          connection = await connect(first).catch(() => null);
          connectedOnce = connection !== null;
        } else if (!connection) {
          reconnects++;
          for (const node of cluster.nodes) {
            connection = await connect(node).catch(() => null);
            if (connection) break;
          }
        }
        if (connection) {
          const n = nextRow++;
          await connection.client.query('INSERT INTO upgrade_writes (n) VALUES ($1)', [n]);
          acknowledged.push({ n, at: Date.now(), node: connection.node.name });
        }
      } catch {
        await connection?.client.end().catch(() => undefined);
        connection = null;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, WRITE_EVERY_MS - (performance.now() - started))));
    }
    await connection?.client.end().catch(() => undefined);
  })();
  const writer = {
    acknowledged,
    async stop() {
      running = false;
      activeWriter = null;
      await done;
      const gaps = acknowledged
        .slice(1)
        .map((write, i) => ({ ms: write.at - acknowledged[i].at, after: new Date(acknowledged[i].at).toISOString() }));
      const longest = gaps.reduce((a, b) => (b.ms > a.ms ? b : a), { ms: 0, after: '' });
      return { writes: acknowledged.length, longestGapMs: longest.ms, longestGapAfter: longest.after, reconnects };
    },
  };
  activeWriter = writer;
  return writer;
}

/** Every acknowledged row is on every node (the replicas given time to replay). */
async function expectEveryRowEverywhere(rows: number[]): Promise<void> {
  for (const node of cluster.nodes) {
    await waitFor(
      async () => {
        const [{ present }] = await sql<{ present: string }>(
          node,
          'SELECT count(*) AS present FROM upgrade_writes WHERE n = ANY($1::int[])',
          [rows],
        ).catch(() => [{ present: '-1' }]);
        return Number(present) === rows.length;
      },
      { timeoutMs: 20_000, description: `${node.name} holding all ${rows.length} acknowledged rows` },
    );
  }
}

/** Stops a node's agent and starts it on `nodeBinary`; resolves once its member key is written by the new agent. */
async function restartAgent(node: LocalNode, nodeBinary: string, runtime: string): Promise<void> {
  const before = node.pid;
  await node.stopAgent();
  node.start(nodeBinary);
  expect(node.pid).not.toBe(before);
  await waitFor(
    async () => (await memberKey(node))?.stator_runtime === runtime && (await node.status())?.state === 'running',
    {
      timeoutMs: 30_000,
      description: `${node.name}'s agent back on ${runtime}`,
    },
  );
}

it('paused, every agent restarts on the new build: no leader change, no PostgreSQL restart, no write gap over 1 s', async () => {
  const newRuntime = runtimeOf(NEW_NODE);
  const leader = await cluster.waitForLeader(30_000);
  const replicas = cluster.nodes.filter((node) => node !== leader);
  const keyBefore = await leaderKey();
  expect(keyBefore?.holder).toBe(leader.name);
  const postmasters = new Map(cluster.nodes.map((node) => [node.name, node.postmasterPid()]));
  const timelines = new Map(
    await Promise.all(cluster.nodes.map(async (node) => [node.name, (await node.status())?.timeline] as const)),
  );

  const writer = startWriter(leader);
  await statorctl('pause', '--wait');
  for (const node of cluster.nodes) expect((await memberKey(node))?.pause).toBe(true);

  // Replicas first, then the leader; one at a time.
  for (const node of replicas) await restartAgent(node, NEW_NODE, newRuntime);
  // What a load balancer checking the agent's API sees: from the SIGTERM to the new agent's first 200 on /primary.
  const leaderRestart = performance.now();
  await restartAgent(leader, NEW_NODE, newRuntime);
  await waitFor(async () => (await leader.healthCode('/primary')) === 200, {
    timeoutMs: 30_000,
    intervalMs: 50,
    description: `${leader.name} answering /primary again`,
  });
  const apiDownMs = performance.now() - leaderRestart;
  // Still paused: the leader key never went away, so nothing raced for it.
  expect(await leaderKey()).toEqual(keyBefore);

  await statorctl('resume', '--wait');
  await cluster.waitForHealthy(30_000);
  const { writes, longestGapMs, longestGapAfter, reconnects } = await writer.stop();
  console.log(
    `paused rolling upgrade onto ${newRuntime}: ${writes} writes, longest gap ${longestGapMs} ms (after ${longestGapAfter}), ` +
      `the leader's API away ${Math.round(apiDownMs)} ms`,
  );

  expect((await cluster.waitForLeader(10_000)).name).toBe(leader.name);
  expect(await leaderKey()).toMatchObject({ holder: leader.name, createRevision: keyBefore?.createRevision });
  for (const node of cluster.nodes) {
    expect({ node: node.name, postmaster: node.postmasterPid() }).toEqual({
      node: node.name,
      postmaster: postmasters.get(node.name),
    });
    expect({ node: node.name, timeline: (await node.status())?.timeline }).toEqual({
      node: node.name,
      timeline: timelines.get(node.name),
    });
    expect({ node: node.name, runtime: (await memberKey(node))?.stator_runtime }).toEqual({
      node: node.name,
      runtime: newRuntime,
    });
  }
  // The session the writer opened before the upgrade served every write: PostgreSQL never noticed.
  expect(reconnects).toBe(0);
  expect(longestGapMs).toBeLessThan(1000);
  await expectEveryRowEverywhere(writer.acknowledged.map((write) => write.n));
  // The change of runtime is in the cluster's event log, as the replica upgraded first saw the others change.
  const oldRuntime = runtimeOf(OLD_NODE);
  const seen = (await (
    await fetch(`${leader.apiUrl}/events?type=member.agent_seen&node=${replicas[0].name}`)
  ).json()) as { data: Record<string, unknown> }[];
  for (const node of [replicas[1], leader]) {
    const change = seen.find((event) => event.data.member === node.name && event.data.runtime === newRuntime);
    expect({ member: node.name, previousRuntime: change?.data.previousRuntime }).toEqual({
      member: node.name,
      previousRuntime: NEW_NODE === OLD_NODE ? null : oldRuntime,
    });
  }
});

it("unpaused, the replicas' agents restart with their PostgreSQL, and the leader's agent hands the leader on", async () => {
  const oldRuntime = runtimeOf(OLD_NODE);
  const leader = await cluster.waitForLeader(30_000);
  const replicas = cluster.nodes.filter((node) => node !== leader);
  const writer = startWriter(leader);

  for (const node of replicas) {
    const postmaster = node.postmasterPid();
    await restartAgent(node, OLD_NODE, oldRuntime);
    await cluster.waitForStreaming([node.name], 30_000);
    // Unpaused, an agent's stop stops its PostgreSQL, as Patroni's does.
    expect(node.postmasterPid()).not.toBe(postmaster);
  }
  expect((await cluster.waitForLeader(10_000)).name).toBe(leader.name);
  const replicaGapMs = Math.max(
    0,
    ...writer.acknowledged.slice(1).map((write, i) => write.at - writer.acknowledged[i].at),
  );

  await restartAgent(leader, OLD_NODE, oldRuntime);
  const healthy = await cluster.waitForHealthy(60_000);
  const { writes, longestGapMs, reconnects } = await writer.stop();
  console.log(
    `unpaused: ${writes} writes; longest gap ${replicaGapMs} ms while the replicas' agents restarted, ` +
      `${longestGapMs} ms in all (the leader's agent restart: ${leader.name} handed over to ${healthy.name})`,
  );

  // Stopping the leader's agent stopped its PostgreSQL and released the key: another node leads.
  expect(healthy.name).not.toBe(leader.name);
  expect(reconnects).toBeGreaterThan(0);
  expect(replicaGapMs).toBeLessThan(1000);
  await expectEveryRowEverywhere(writer.acknowledged.map((write) => write.n));
});

it("paused: a leader's agent stopped cleanly leaves PostgreSQL running, as Patroni; a killed one leaves its fence to stop it at the lease's end", async () => {
  const leader = await cluster.waitForHealthy(60_000);
  await statorctl('pause', '--wait');
  const postmaster = leader.postmasterPid()!;
  await leader.stopAgent();
  // "Leader key is not deleted and PostgreSQL is not stopped due paused state": the key lives out its ttl, and
  // PostgreSQL outlives it (the fence was disarmed; armed, it would have stopped PostgreSQL before the key expired).
  await waitFor(async () => (await leaderKey()) === null, {
    timeoutMs: 40_000,
    description: `${leader.name}'s leader key expiring`,
  });
  expect(isAlive(postmaster)).toBe(true);

  leader.start();
  await waitFor(async () => (await leaderKey())?.holder === leader.name, {
    timeoutMs: 30_000,
    description: `${leader.name} holding the leader key again`,
  });
  const killedAt = performance.now();
  await leader.killAgent();
  await waitFor(() => !isAlive(postmaster), {
    timeoutMs: 40_000,
    description: `${leader.name}'s fence stopping PostgreSQL at the lease's end`,
  });
  const stoppedAfterMs = performance.now() - killedAt;
  // Before the key expires: no primary outlives its leader key, which a resume would let a replica take.
  expect(await leaderKey()).toMatchObject({ holder: leader.name });
  expect(stoppedAfterMs).toBeLessThan(30_000);
  expect(readFileSync(join(leader.stateDir, 'fence.log'), 'utf8')).toMatch(
    /passed without a new arm: immediate shutdown of the postmaster/,
  );
  expect(await cluster.primaries()).toEqual([]);
  console.log(
    `paused, the leader's agent killed: its fence stopped PostgreSQL ${Math.round(stoppedAfterMs)} ms after (ttl 30 s)`,
  );
});
