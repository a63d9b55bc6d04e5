import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { sql } from '../helpers/sql';
import { waitFor } from '../helpers/wait-for';
import { patchConfig } from '../helpers/patch-config';

/**
 * A PostgreSQL that fails to start is read, not restarted in a loop: a replica whose port is taken
 * backs off and starts once the port is free; a former primary whose WAL went past the point where
 * the new leader's timeline forked is rewound instead of started again. Agents run from `dist/`:
 * run `npm run build` first.
 */
jest.setTimeout(180_000);

let cluster: LocalCluster;
let baseDir: string;

beforeAll(async () => {
  baseDir = tmpDir('stator-startfail-');
  cluster = await LocalCluster.start({ nodes: 2, baseDir, ttl: 10, loopWait: 2, retryTimeout: 4 });
  await cluster.waitForHealthy(60_000);
});

afterAll(async () => {
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

function logOf(node: LocalNode): string {
  return readFileSync(node.logPath, 'utf8');
}

function count(text: string, pattern: RegExp): number {
  return (text.match(new RegExp(pattern.source, 'g')) ?? []).length;
}

/** Another program on the port; `close` ends it and every connection it accepted, as its exit would. */
function squat(port: number): Promise<{ close: () => void }> {
  const sockets = new Set<Socket>();
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => sockets.add(socket));
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () =>
      resolve({
        close: () => {
          server.close();
          for (const socket of sockets) socket.destroy();
        },
      }),
    );
  });
}

/** PIDs of the postmaster's children whose title names `kind` (e.g. `walreceiver`). */
function backendPids(node: LocalNode, kind: string): number[] {
  const postmaster = node.postmasterPid();
  if (!postmaster) return [];
  const lines = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(postmaster)], { encoding: 'utf8' }).split(
    '\n',
  );
  return lines.filter((line) => line.includes(kind)).map((line) => Number(line.trim().split(/\s+/)[0]));
}

it('backs off while its port is taken, says why, and starts once the port is free', async () => {
  const leader = await cluster.waitForHealthy(30_000);
  const replica = cluster.nodes.find((node) => node !== leader)!;
  await replica.stop();
  const squatter = await squat(replica.pgPort);
  const logStart = logOf(replica).length;
  replica.start();
  const attempts = () => count(logOf(replica).slice(logStart), /INFO: starting as a secondary/);
  try {
    // Four tries take 2 + 4 + 8 s of backoff: about 14 s rather than hundreds of tries.
    await waitFor(() => attempts() >= 1, { timeoutMs: 20_000, description: 'a first start' });
    const started = performance.now();
    await waitFor(() => attempts() >= 4, { timeoutMs: 40_000, description: 'four starts' });
    expect(performance.now() - started).toBeGreaterThan(12_000);
    const log = logOf(replica).slice(logStart);
    expect(log).toMatch(/waiting \d+ s before starting PostgreSQL again: 3 failed start\(s\) \(port_in_use\)/);
  } finally {
    squatter.close();
  }
  await cluster.waitForHealthy(60_000);
  expect(attempts()).toBeLessThanOrEqual(6);
});

it('rewinds a former primary whose WAL went past the fork, without a start loop, once the new leader has promoted', async () => {
  const oldLeader = await cluster.waitForHealthy(30_000);
  const replica = cluster.nodes.find((node) => node !== oldLeader)!;
  // The new leader holds the lock this long before it promotes (its read pool drains first): the former primary
  // comes back inside that window, where pg_rewind against a server still on the old timeline finds nothing to do.
  await patchConfig(oldLeader, { load_balancer_drain_ms: 10_000 });
  await sql(oldLeader, 'CREATE TABLE IF NOT EXISTS survivors (n int)');
  await sql(oldLeader, 'INSERT INTO survivors VALUES (1)');
  await waitFor(async () => (await sql(replica, 'SELECT count(*)::int AS n FROM survivors'))[0]?.n === 1, {
    timeoutMs: 10_000,
    description: 'row replicated',
  });

  // The leader's WAL sender stops, so nothing written from now on reaches the replica; the leader
  // writes on, checkpoints past the replica's position, then loses power.
  const senders = backendPids(oldLeader, 'walsender');
  expect(senders.length).toBe(1);
  process.kill(senders[0], 'SIGSTOP');
  await sql(oldLeader, 'CREATE TABLE lost_with_the_old_timeline AS SELECT generate_series(1, 1000) AS n');
  await sql(oldLeader, 'CHECKPOINT');
  await oldLeader.powerCut();
  const newLeader = await cluster.waitForLeader(40_000);
  expect(newLeader.name).toBe(replica.name);

  const logStart = logOf(oldLeader).length;
  oldLeader.start();
  await waitFor(
    () => logOf(oldLeader).slice(logStart).includes(`waiting for ${replica.name} to finish its promotion`),
    {
      timeoutMs: 9000,
      description: 'the former primary waiting for the promotion',
    },
  );
  expect((await oldLeader.status())?.state).toBe('stopped');
  await cluster.waitForHealthy(60_000);
  await patchConfig(newLeader, { load_balancer_drain_ms: null });
  const log = logOf(oldLeader).slice(logStart);
  // One pg_rewind, against the promoted server: none before, and no second one to repair the first.
  expect(count(log, /running pg_rewind from/)).toBe(1);
  expect(log).not.toMatch(/failed start\(s\)/);
  // The rewound node holds the new leader's data and none of the abandoned timeline's.
  expect((await sql(oldLeader, 'SELECT count(*)::int AS n FROM survivors'))[0].n).toBe(1);
  expect(await sql(oldLeader, "SELECT to_regclass('lost_with_the_old_timeline') AS t")).toEqual([{ t: null }]);
});
