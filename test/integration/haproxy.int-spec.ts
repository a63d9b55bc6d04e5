import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { COMPOSE_HAPROXY_CONFIG, EXAMPLE_HAPROXY_CONFIG, haproxyConfig } from '../../scripts/lib/haproxy-config';
import { LocalCluster } from '../../scripts/lib/local-cluster';
import { freePort } from '../../scripts/lib/ports';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { killLeaderAndWait } from '../helpers/kill-leader';

/**
 * Debian's HAProxy in front of a real 3-node cluster, configured by the same template as the
 * shipped deploy/haproxy.cfg: clients write through the primary port and read through the
 * replica port, as applications do, while the cluster switches over.
 */
jest.setTimeout(120_000);

let cluster: LocalCluster;
let baseDir: string;
let haproxy: ChildProcess;
let ports: { primary: number; replicas: number };

/** One statement on a fresh connection through HAProxy; a statement that selects `port` answers the PostgreSQL port that served it. */
async function through(port: number, text: string): Promise<number | null> {
  const client = new Client({
    host: '127.0.0.1',
    port,
    user: 'postgres',
    password: 'postgres',
    database: 'postgres',
    connectionTimeoutMillis: 1000,
    statement_timeout: 1000,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const result = await client.query<{ port: number }>(text);
    return result.rows[0]?.port ?? null;
  } finally {
    await client.end().catch(() => undefined);
  }
}

beforeAll(async () => {
  baseDir = tmpDir('stator-haproxy-');
  cluster = await LocalCluster.start({ nodes: 3, baseDir, ttl: 10, loopWait: 2, retryTimeout: 4 });
  const leader = await cluster.waitForLeader(60_000);
  await cluster.waitForStreaming(
    cluster.nodes.filter((node) => node !== leader).map((node) => node.name),
    60_000,
  );
  ports = { primary: await freePort(), replicas: await freePort() };
  const config = haproxyConfig(
    cluster.nodes.map((node) => ({
      name: node.name,
      host: '127.0.0.1',
      pgPort: node.pgPort,
      apiPort: Number(new URL(node.apiUrl).port),
    })),
    {
      primary: `127.0.0.1:${ports.primary}`,
      replicas: `127.0.0.1:${ports.replicas}`,
      stats: `127.0.0.1:${await freePort()}`,
    },
  );
  const file = join(baseDir, 'haproxy.cfg');
  writeFileSync(file, config);
  haproxy = spawn('haproxy', ['-db', '-f', file], { stdio: 'ignore' });
  // HAProxy starts with every server up until its checks say otherwise: wait until they have.
  await waitFor(
    async () => {
      for (let i = 0; i < 6; i++)
        if ((await through(ports.primary, 'SELECT inet_server_port() AS port')) !== leader.pgPort) return false;
      return true;
    },
    { timeoutMs: 15_000, description: 'HAProxy routing every write to the leader' },
  );
  await waitFor(
    async () => {
      for (let i = 0; i < 6; i++)
        if ((await through(ports.replicas, 'SELECT inet_server_port() AS port')) === leader.pgPort) return false;
      return true;
    },
    { timeoutMs: 15_000, description: 'HAProxy routing no read to the leader' },
  );
  await through(ports.primary, 'CREATE TABLE IF NOT EXISTS through_haproxy (id serial, at timestamptz DEFAULT now())');
});

afterAll(async () => {
  if (haproxy?.pid) haproxy.kill('SIGKILL');
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

it('ships deploy/haproxy.cfg and the docker-compose one as the template renders them', () => {
  expect(readFileSync(join(__dirname, '..', '..', 'deploy', 'haproxy.cfg'), 'utf8')).toBe(EXAMPLE_HAPROXY_CONFIG);
  expect(readFileSync(join(__dirname, '..', '..', 'deploy', 'haproxy-compose.cfg'), 'utf8')).toBe(
    COMPOSE_HAPROXY_CONFIG,
  );
  // Valid for HAProxy itself (the compose file's host names only resolve inside Docker: a warning here).
  for (const file of ['haproxy.cfg', 'haproxy-compose.cfg']) {
    expect(() =>
      execFileSync('haproxy', ['-c', '-f', join(__dirname, '..', '..', 'deploy', file)], { stdio: 'pipe' }),
    ).not.toThrow();
  }
});

it('spreads reads over both replicas', async () => {
  const leader = await cluster.waitForLeader(10_000);
  const served = new Set<number | null>();
  for (let i = 0; i < 12; i++) served.add(await through(ports.replicas, 'SELECT inet_server_port() AS port'));
  const byNumber = (a: number | null, b: number | null) => (a ?? 0) - (b ?? 0);
  expect([...served].sort(byNumber)).toEqual(
    cluster.nodes
      .filter((node) => node !== leader)
      .map((node) => node.pgPort)
      .sort(byNumber),
  );
});

/**
 * A writer (a new connection and an insert every 50 ms) through the primary port and a reader (every
 * 20 ms) through the replica port, as applications do: the reader counts reads a primary answered.
 */
function traffic() {
  const acknowledged: { at: number; port: number }[] = [];
  const readsOnPrimary: number[] = [];
  let running = true;
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const writer = (async () => {
    while (running) {
      const port = await through(
        ports.primary,
        'INSERT INTO through_haproxy DEFAULT VALUES RETURNING inet_server_port() AS port',
      ).catch(() => null);
      if (port !== null) acknowledged.push({ at: Date.now(), port });
      await pause(50);
    }
  })();
  const reader = (async () => {
    while (running) {
      const port = await through(
        ports.replicas,
        'SELECT inet_server_port() AS port WHERE NOT pg_is_in_recovery()',
      ).catch(() => null);
      if (port !== null) readsOnPrimary.push(port);
      await pause(20);
    }
  })();
  return {
    acknowledged,
    readsOnPrimary,
    longestGap: () => Math.max(...acknowledged.slice(1).map((write, index) => write.at - acknowledged[index].at)),
    stop: async () => {
      running = false;
      await Promise.all([writer, reader]);
    },
  };
}

/** The last `count` load balancer moments a node recorded (`load_balancer.*` on its own stream), once it has recorded that many. */
async function lastLoadBalancerMoments(apiUrl: string, node: string, count: number): Promise<string[]> {
  let types: string[] = [];
  await waitFor(
    async () => {
      const response = await fetch(`${apiUrl}/events?stream=${encodeURIComponent(`node/${node}/load-balancer`)}`);
      types = ((await response.json()) as { type: string }[]).map((event) => event.type);
      return types.length >= count;
    },
    { timeoutMs: 5000, description: `${node}'s load balancer events` },
  ).catch(() => undefined);
  return types.slice(-count);
}

it('sends writes to the new leader within 3 s of a switchover, none is acknowledged by the old one after it, and no read reaches a primary', async () => {
  const leader = await cluster.waitForLeader(10_000);
  const candidate = cluster.nodes.find((node) => node !== leader)!;
  const load = traffic();
  const { acknowledged } = load;

  await waitFor(() => acknowledged.length >= 5, {
    timeoutMs: 10_000,
    description: 'writes through HAProxy before the switchover',
  });
  const response = await fetch(`${leader.apiUrl}/switchover`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ leader: leader.name, candidate: candidate.name }),
  });
  const switched = Date.now();
  expect(response.status).toBe(200);
  await waitFor(() => acknowledged.some((write) => write.port === candidate.pgPort), {
    timeoutMs: 10_000,
    description: 'a write acknowledged by the new leader',
  });
  await load.stop();

  const firstOnNewLeader = acknowledged.find((write) => write.port === candidate.pgPort)!;
  const gap = load.longestGap();
  console.log(
    `haproxy switchover: first write on the new leader ${firstOnNewLeader.at - switched} ms after the switchover answered; longest write gap ${gap} ms`,
  );
  expect(gap).toBeLessThan(3000);
  expect(firstOnNewLeader.at - switched).toBeLessThan(3000);
  expect(acknowledged.filter((write) => write.port === leader.pgPort && write.at > switched)).toEqual([]);
  expect(load.readsOnPrimary).toEqual([]);
  // The old leader drained before it demoted, and recorded when /primary went 503.
  expect(await lastLoadBalancerMoments(leader.apiUrl, leader.name, 3)).toEqual([
    'load_balancer.drain_started',
    'load_balancer.drain_ended',
    'load_balancer.primary_checks_withdrawn',
  ]);
});

it('fails over through HAProxy when the leader agent and postmaster are killed: writes back within 3 s, no read on the new primary', async () => {
  const leader = await cluster.waitForLeader(10_000);
  await cluster.waitForStreaming(
    cluster.nodes.filter((node) => node !== leader).map((node) => node.name),
    30_000,
  );
  const load = traffic();
  const { acknowledged } = load;
  await waitFor(() => acknowledged.length >= 5, {
    timeoutMs: 10_000,
    description: 'writes through HAProxy before the failover',
  });
  const { newLeader, killedAt } = await killLeaderAndWait(cluster, leader, { timeoutMs: 20_000 });
  await waitFor(() => acknowledged.some((write) => write.port === newLeader.pgPort), {
    timeoutMs: 10_000,
    description: 'a write acknowledged by the new leader',
  });
  await load.stop();

  const gap = load.longestGap();
  const back = acknowledged.find((write) => write.port === newLeader.pgPort)!.at - killedAt;
  console.log(
    `haproxy failover: writes on the new leader ${back} ms after the kill; longest write gap ${gap} ms; reads on a primary ${load.readsOnPrimary.length}`,
  );
  expect(gap).toBeLessThan(3000);
  expect(load.readsOnPrimary).toEqual([]);
  // The new leader left the read pool as it took the lock, and promoted only after the drain.
  expect(await lastLoadBalancerMoments(newLeader.apiUrl, newLeader.name, 3)).toEqual([
    'load_balancer.replica_checks_withdrawn',
    'load_balancer.drain_started',
    'load_balancer.drain_ended',
  ]);
});
