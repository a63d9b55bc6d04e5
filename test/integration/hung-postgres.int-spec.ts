import { readFileSync } from 'node:fs';
import { Client } from 'pg';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { descendantsOf, isRunningProcess } from '../../src/common/process-tree';
import { sql } from '../helpers/sql';
import { waitFor } from '../helpers/wait-for';

/**
 * Every process of the leader's PostgreSQL stopped with SIGSTOP: a server that accepts connections
 * and answers nothing. Past postgres_unresponsive_timeout (half the ttl: 5 s here) its health checks
 * turn 503, it is killed, and another node is primary within ttl + 5 s with every acknowledged write.
 * A shorter stall changes nothing. Agents run from `dist/`: run `npm run build` first.
 */
jest.setTimeout(180_000);

const TTL = 10;
const UNRESPONSIVE_TIMEOUT_MS = 5_000;

let cluster: LocalCluster;
let baseDir: string;

beforeAll(async () => {
  baseDir = tmpDir('stator-hung-');
  cluster = await LocalCluster.start({ nodes: 3, baseDir, ttl: TTL, loopWait: 2, retryTimeout: 4 });
  const leader = await cluster.waitForHealthy(60_000);
  await sql(leader, 'CREATE TABLE acknowledged (n int PRIMARY KEY)');
});

afterAll(async () => {
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

/** The postmaster and every process it started. */
function serverProcesses(node: LocalNode): number[] {
  const postmaster = node.postmasterPid();
  if (!postmaster) throw new Error(`${node.name} has no postmaster`);
  return [postmaster, ...descendantsOf(postmaster)];
}

function signalAll(pids: number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // gone
    }
  }
}

/**
 * A client writing a row every 50 ms to whichever node answers `/primary`, as a load balancer
 * would route it; a row counts once its INSERT returned.
 */
function startWriter(): {
  acknowledged: () => number;
  pause: () => Promise<void>;
  resume: () => void;
  stop: () => Promise<number[]>;
} {
  const acknowledged: number[] = [];
  let next = 1;
  let running = true;
  let paused = false;
  let idle = null as (() => void) | null;
  const loop = (async () => {
    while (running) {
      if (paused) {
        idle?.();
        await new Promise((resolve) => setTimeout(resolve, 20));
        continue;
      }
      const primaries = await cluster.primaries();
      const target = primaries.length === 1 ? cluster.node(primaries[0]) : null;
      if (target) {
        const client = new Client({
          connectionString: target.connectionString(),
          connectionTimeoutMillis: 500,
          query_timeout: 1000,
        });
        client.on('error', () => undefined);
        const n = next++;
        try {
          await client.connect();
          await client.query('INSERT INTO acknowledged VALUES ($1)', [n]);
          acknowledged.push(n);
        } catch {
          // not acknowledged: the client would retry elsewhere
        } finally {
          void client.end().catch(() => undefined);
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  return {
    acknowledged: () => acknowledged.length,
    /** Resolves once no write is in flight. */
    pause: () =>
      new Promise<void>((resolve) => {
        idle = () => {
          idle = null;
          resolve();
        };
        paused = true;
      }),
    resume: () => {
      paused = false;
    },
    stop: async () => {
      running = false;
      await loop;
      return acknowledged;
    },
  };
}

it('a monitoring query that keeps hitting statement_timeout for longer than the ttl demotes nothing: the cached role stands (Patroni 4.1.4)', async () => {
  const leader = await cluster.waitForHealthy(30_000);
  const timeline = (await leader.status())?.timeline;
  const logBefore = readFileSync(leader.logPath, 'utf8').length;
  // The monitoring query reads pg_settings: a transaction holding it locked makes it wait into statement_timeout.
  const blocker = new Client({ connectionString: leader.connectionString() });
  blocker.on('error', () => undefined);
  await blocker.connect();
  const codes = new Set<number>();
  try {
    await blocker.query('BEGIN');
    await blocker.query('LOCK TABLE pg_catalog.pg_settings IN ACCESS EXCLUSIVE MODE');
    const until = performance.now() + (TTL + 2) * 1000;
    while (performance.now() < until) {
      codes.add(await leader.healthCode('/primary'));
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } finally {
    await blocker.query('ROLLBACK').catch(() => undefined);
    await blocker.end().catch(() => undefined);
  }
  expect([...codes]).toEqual([200]);
  const log = readFileSync(leader.logPath, 'utf8').slice(logBefore);
  expect(log).toContain(
    'Failed to determine PostgreSQL state from the connection (statement timeout), falling back to cached role: primary',
  );
  expect(log).not.toMatch(/demot/i);
  const healthy = await cluster.waitForHealthy(10_000);
  expect(healthy.name).toBe(leader.name);
  expect((await leader.status())?.timeline).toBe(timeline);
});

it('a stall shorter than the timeout changes nothing', async () => {
  const leader = await cluster.waitForHealthy(30_000);
  const processes = serverProcesses(leader);
  const codes = new Set<number>();
  signalAll(processes, 'SIGSTOP');
  try {
    const until = performance.now() + 3_000;
    while (performance.now() < until) {
      codes.add(await leader.healthCode('/primary'));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    signalAll(processes, 'SIGCONT');
  }
  expect([...codes]).toEqual([200]);
  expect(serverProcesses(leader)[0]).toBe(processes[0]);
  expect((await cluster.waitForHealthy(10_000)).name).toBe(leader.name);
});

it('a hung leader stops answering 200 within the timeout + 1 s, is killed, and another node is primary within ttl + 5 s, losing no acknowledged write', async () => {
  const leader = await cluster.waitForHealthy(30_000);
  const writer = startWriter();
  await waitFor(
    async () => Number((await sql<{ n: string }>(leader, 'SELECT count(*) AS n FROM acknowledged'))[0].n) > 10,
    { timeoutMs: 10_000, description: 'writes flowing' },
  );

  // Replication is asynchronous: a write acknowledged in the last milliseconds before the hang may not have left
  // the (then stopped) WAL sender. The writes acknowledged so far reach the replicas first; the writer then goes on.
  await writer.pause();
  const [{ lsn }] = await sql<{ lsn: string }>(leader, 'SELECT pg_current_wal_lsn()::text AS lsn');
  for (const replica of cluster.nodes.filter((node) => node !== leader)) {
    await waitFor(
      async () =>
        Number(
          (
            await sql<{ behind: string }>(
              replica,
              'SELECT pg_wal_lsn_diff($1::pg_lsn, pg_last_wal_replay_lsn())::text AS behind',
              [lsn],
            )
          )[0].behind,
        ) <= 0,
      {
        timeoutMs: 10_000,
        description: `${replica.name} replaying the acknowledged writes`,
      },
    );
  }
  writer.resume();
  const processes = serverProcesses(leader);
  const hungAt = performance.now();
  signalAll(processes, 'SIGSTOP');
  let acknowledged: number[];
  try {
    await waitFor(async () => (await leader.healthCode('/primary')) !== 200, {
      timeoutMs: 15_000,
      intervalMs: 50,
      description: `${leader.name} leaving /primary`,
    });
    const primaryGoneMs = performance.now() - hungAt;
    const newLeader = await cluster.waitForLeader(30_000, [leader.name]);
    const failoverMs = performance.now() - hungAt;
    console.log(
      `hung leader: /primary 503 after ${Math.round(primaryGoneMs)} ms, ${newLeader.name} primary after ${Math.round(failoverMs)} ms`,
    );
    expect(primaryGoneMs).toBeLessThan(UNRESPONSIVE_TIMEOUT_MS + 1_000);
    expect(failoverMs).toBeLessThan((TTL + 5) * 1000);
    // The hung server was ended, not left to wake up as a second primary.
    expect(processes.filter(isRunningProcess)).toEqual([]);
    const before = writer.acknowledged();
    await waitFor(() => writer.acknowledged() >= before + 5, {
      timeoutMs: 10_000,
      description: `writes acknowledged by ${newLeader.name}`,
    });
  } finally {
    signalAll(processes, 'SIGCONT');
    acknowledged = await writer.stop();
  }

  const finalLeader = await cluster.waitForHealthy(60_000);
  expect(finalLeader.name).not.toBe(leader.name);
  const rows = await sql<{ n: number }>(finalLeader, 'SELECT n FROM acknowledged');
  const stored = new Set(rows.map((row) => row.n));
  expect(acknowledged.filter((n) => !stored.has(n))).toEqual([]);
  expect(acknowledged.length).toBeGreaterThan(15);
});

it('a hung primary whose agent comes back after another node took the lock is killed, not left to wake as a second primary', async () => {
  const leader = await cluster.waitForHealthy(60_000);
  // No fence to stop it at the lease's end, no agent: only the agent that comes back can end the hang.
  await leader.killFenceAndAgent();
  const processes = serverProcesses(leader);
  signalAll(processes, 'SIGSTOP');
  try {
    const newLeader = await cluster.waitForLeader(3 * TTL * 1000, [leader.name]);
    const logStart = readFileSync(leader.logPath, 'utf8').length;
    leader.start();
    await waitFor(() => processes.every((pid) => !isRunningProcess(pid)), {
      timeoutMs: UNRESPONSIVE_TIMEOUT_MS + 15_000,
      description: `${leader.name}'s hung server killed by its agent`,
    });
    expect(readFileSync(leader.logPath, 'utf8').slice(logStart)).toContain(
      'killing it, a primary without the leader key',
    );
    // It comes back as a replica of the new leader.
    const healthy = await cluster.waitForHealthy(60_000);
    expect(healthy.name).toBe(newLeader.name);
    expect(await cluster.primaries()).toEqual([newLeader.name]);
  } finally {
    signalAll(processes, 'SIGCONT');
  }
});
