import { ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { haproxyConfig } from '../../scripts/lib/haproxy-config';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { LocalPgbouncer } from '../../scripts/lib/pgbouncer';
import { freePort } from '../../scripts/lib/ports';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { killLeaderAndWait } from '../helpers/kill-leader';

/**
 * Debian's PgBouncer, run from the shipped deploy/pgbouncer.ini as the postgres OS user, in front of
 * HAProxy's primary port (the shipped HAProxy template) in front of a 3-node cluster. An application
 * keeps one connection to PgBouncer and inserts a tagged row every 50 ms through a switchover and a
 * failover: the write gap and the errors it sees are measured, and no acknowledged write is lost.
 * Replication is asynchronous: through a kill -9 of the primary, a write it acknowledged in its last
 * milliseconds may be missing on the new one (synchronous_mode is the cure); the test counts those and
 * requires none of the writes the new leader acknowledged to be missing.
 */
jest.setTimeout(120_000);

let cluster: LocalCluster;
let baseDir: string;
let haproxy: ChildProcess;
let bouncer: LocalPgbouncer;
/** A writer still running when a test failed half-way: stopped after it, so jest can exit. */
const writers: { stop(): Promise<void> }[] = [];

afterEach(async () => {
  await Promise.all(writers.splice(0).map((w) => w.stop()));
});

beforeAll(async () => {
  baseDir = tmpDir('stator-pgbouncer-');
  cluster = await LocalCluster.start({ nodes: 3, baseDir, ttl: 10, loopWait: 2, retryTimeout: 4 });
  const leader = await cluster.waitForLeader(60_000);
  await cluster.waitForStreaming(
    cluster.nodes.filter((node) => node !== leader).map((node) => node.name),
    60_000,
  );
  const primaryPort = await freePort();
  const config = haproxyConfig(
    cluster.nodes.map((node) => ({
      name: node.name,
      host: '127.0.0.1',
      pgPort: node.pgPort,
      apiPort: Number(new URL(node.apiUrl).port),
    })),
    {
      primary: `127.0.0.1:${primaryPort}`,
      replicas: `127.0.0.1:${await freePort()}`,
      stats: `127.0.0.1:${await freePort()}`,
    },
  );
  writeFileSync(join(baseDir, 'haproxy.cfg'), config);
  haproxy = spawn('haproxy', ['-db', '-f', join(baseDir, 'haproxy.cfg')], { stdio: 'ignore' });
  const dir = join(baseDir, 'pgbouncer');
  mkdirSync(dir);
  bouncer = await LocalPgbouncer.start({
    dir,
    listenPort: await freePort(),
    upstreamPort: primaryPort,
    user: 'postgres',
    password: 'postgres',
  });
  // HAProxy starts with every server up until its checks say otherwise: wait until writes reach the leader only.
  await waitFor(
    async () => {
      for (let i = 0; i < 6; i++)
        if ((await once('SELECT inet_server_port() AS port WHERE NOT pg_is_in_recovery()'))?.port !== leader.pgPort)
          return false;
      return true;
    },
    { timeoutMs: 15_000, description: 'PgBouncer and HAProxy sending every statement to the leader' },
  );
  await once('CREATE TABLE through_pgbouncer (tag text PRIMARY KEY)');
});

afterAll(async () => {
  await bouncer?.stop();
  if (haproxy?.pid) haproxy.kill('SIGKILL');
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

function client(): Client {
  const c = new Client({
    host: '127.0.0.1',
    port: bouncer.port,
    user: 'postgres',
    password: 'postgres',
    database: 'postgres',
    connectionTimeoutMillis: 2000,
    query_timeout: 5000,
  });
  c.on('error', () => undefined);
  return c;
}

async function once(text: string): Promise<{ port: number } | null> {
  const c = client();
  try {
    await c.connect();
    return (await c.query<{ port: number }>(text)).rows[0] ?? null;
  } finally {
    await c.end().catch(() => undefined);
  }
}

/**
 * An application's writer: one connection to PgBouncer kept open, a tagged insert every 50 ms; on an
 * error it records the message, opens a new connection and goes on.
 */
function writer(name: string) {
  const acknowledged: { tag: string; at: number; port: number; tookMs: number }[] = [];
  const errors: { at: number; message: string }[] = [];
  let running = true;
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const loop = (async () => {
    let connection: Client | null = null;
    for (let seq = 1; running; seq++) {
      const tag = `${name}-${seq}`;
      const sent = Date.now();
      try {
        if (!connection) {
          connection = client();
          await connection.connect();
        }
        const result = await connection.query<{ port: number }>(
          'INSERT INTO through_pgbouncer (tag) VALUES ($1) RETURNING inet_server_port() AS port',
          [tag],
        );
        acknowledged.push({ tag, at: Date.now(), port: result.rows[0].port, tookMs: Date.now() - sent });
      } catch (error) {
        errors.push({ at: Date.now(), message: (error as Error).message });
        await connection?.end().catch(() => undefined);
        connection = null;
      }
      await pause(50);
    }
    await connection?.end().catch(() => undefined);
  })();
  const handle = {
    acknowledged,
    errors,
    /** PgBouncer queues a statement while no server answers: the longest one a client waited for. */
    longestWait: () => Math.max(...acknowledged.map((write) => write.tookMs)),
    longestGap: () => Math.max(...acknowledged.slice(1).map((write, index) => write.at - acknowledged[index].at)),
    stop: async () => {
      running = false;
      await loop;
    },
  };
  writers.push(handle);
  return handle;
}

/** The acknowledged tags the new leader does not hold. */
async function lost(node: LocalNode, tags: string[]): Promise<string[]> {
  const direct = new Client({ connectionString: node.connectionString() });
  await direct.connect();
  try {
    const rows = (await direct.query<{ tag: string }>('SELECT tag FROM through_pgbouncer WHERE tag = ANY($1)', [tags]))
      .rows;
    const present = new Set(rows.map((row) => row.tag));
    return tags.filter((tag) => !present.has(tag));
  } finally {
    await direct.end();
  }
}

function summary(errors: { message: string }[]): string {
  const counts = new Map<string, number>();
  for (const { message } of errors) counts.set(message, (counts.get(message) ?? 0) + 1);
  return [...counts].map(([message, count]) => `${count}× "${message}"`).join('; ') || 'none';
}

it('writes through PgBouncer reach the new leader within 3 s of a switchover, with no acknowledged write lost', async () => {
  const leader = await cluster.waitForLeader(10_000);
  const candidate = cluster.nodes.find((node) => node !== leader)!;
  const load = writer('switchover');
  await waitFor(() => load.acknowledged.length >= 5, {
    timeoutMs: 10_000,
    description: 'writes through PgBouncer before the switchover',
  });
  const started = Date.now();
  const response = await fetch(`${leader.apiUrl}/switchover`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ leader: leader.name, candidate: candidate.name }),
  });
  expect(response.status).toBe(200);
  await waitFor(() => load.acknowledged.some((write) => write.port === candidate.pgPort), {
    timeoutMs: 15_000,
    description: 'a write through PgBouncer acknowledged by the new leader',
  });
  await load.stop();

  const first = load.acknowledged.find((write) => write.port === candidate.pgPort)!;
  const gap = load.longestGap();
  console.log(
    `pgbouncer switchover: first write on the new leader +${first.at - started} ms after the POST; write gap ${gap} ms; longest wait on one insert ${load.longestWait()} ms; client errors: ${summary(load.errors)}`,
  );
  expect(gap).toBeLessThan(3000);
  expect(load.acknowledged.filter((write) => write.port === leader.pgPort && write.at > first.at)).toEqual([]);
  expect(
    await lost(
      candidate,
      load.acknowledged.map((write) => write.tag),
    ),
  ).toEqual([]);
});

it('fails over through PgBouncer when the leader agent and postmaster are killed: writes back within ttl + 5 s, none the new leader acknowledged lost', async () => {
  const leader = await cluster.waitForLeader(10_000);
  await cluster.waitForStreaming(
    cluster.nodes.filter((node) => node !== leader).map((node) => node.name),
    30_000,
  );
  const load = writer('failover');
  await waitFor(() => load.acknowledged.length >= 5, {
    timeoutMs: 15_000,
    description: 'writes through PgBouncer before the failover',
  });
  const { newLeader, killedAt } = await killLeaderAndWait(cluster, leader, { timeoutMs: 20_000 });
  await waitFor(() => load.acknowledged.some((write) => write.port === newLeader.pgPort), {
    timeoutMs: 15_000,
    description: 'a write through PgBouncer acknowledged by the new leader',
  });
  await load.stop();

  const back = load.acknowledged.find((write) => write.port === newLeader.pgPort)!.at - killedAt;
  const gap = load.longestGap();
  console.log(
    `pgbouncer failover: writes on the new leader +${back} ms after the kill; write gap ${gap} ms; longest wait on one insert ${load.longestWait()} ms; client errors: ${summary(load.errors)}`,
  );
  const missing = await lost(
    newLeader,
    load.acknowledged.map((write) => write.tag),
  );
  console.log(`pgbouncer failover: acknowledged writes lost ${missing.length} of ${load.acknowledged.length}`);
  expect(gap).toBeLessThan(15_000);
  expect(missing.filter((tag) => load.acknowledged.find((write) => write.tag === tag)!.port !== leader.pgPort)).toEqual(
    [],
  );
  // Asynchronous replication on one machine: at most the writes of the old primary's last 200 ms.
  expect(missing.filter((tag) => load.acknowledged.find((write) => write.tag === tag)!.at < killedAt - 200)).toEqual(
    [],
  );
  // PgBouncer noticed the dead server connections and logged it, as an operator would read it.
  expect(bouncer.log()).toMatch(/closing because: /);
});
