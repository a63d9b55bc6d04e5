import { readFileSync } from 'node:fs';
import { LocalCluster } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { isPrimaryServer, sql } from '../helpers/sql';

/**
 * `primary_race_backoff` (Patroni 4.1) on a real 2-node cluster: set through PATCH /config, then the
 * leader's agent is frozen (SIGSTOP) while a client keeps writing to its PostgreSQL. When the leader
 * key is gone the replica holds back from the race, saying how long, then takes over; the frozen
 * agent, thawed, rejoins as a replica.
 */
jest.setTimeout(120_000);

let cluster: LocalCluster;
let baseDir: string;

beforeAll(async () => {
  baseDir = tmpDir('stator-race-backoff-');
  cluster = await LocalCluster.start({ nodes: 2, baseDir, ttl: 10, loopWait: 2, retryTimeout: 4 });
  const leader = await cluster.waitForHealthy(60_000);
  await sql(leader, 'CREATE TABLE ticks (n int)');
});

afterAll(async () => {
  for (const node of cluster?.nodes ?? []) node.signal('SIGCONT');
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

it('is accepted by PATCH /config as a key Stator acts on, and refused when not seconds', async () => {
  const leader = await cluster.waitForLeader(10_000);
  const patch = (body: unknown) =>
    fetch(`${leader.apiUrl}/config`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  const bad = await patch({ primary_race_backoff: -1 });
  expect(bad.status).toBe(400);
  expect(await bad.text()).toContain('primary_race_backoff');
  const good = await patch({ primary_race_backoff: 6 });
  expect({ status: good.status, warning: good.headers.get('warning') }).toEqual({ status: 200, warning: null });
  expect(
    ((await (await fetch(`${leader.apiUrl}/config`)).json()) as Record<string, unknown>).primary_race_backoff,
  ).toBe(6);
});

it('a replica holds back from the leader race when the key of a frozen leader expires, then takes over; the leader rejoins', async () => {
  const leader = await cluster.waitForLeader(10_000);
  const replica = cluster.nodes.find((node) => node !== leader)!;
  const logStart = readFileSync(replica.logPath, 'utf8').length;
  let writing = true;
  const writer = (async () => {
    for (let n = 0; writing; n++) {
      await sql(leader, 'INSERT INTO ticks VALUES ($1)', [n]).catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  const frozenAt = Date.now();
  leader.signal('SIGSTOP');
  try {
    await waitFor(async () => (await replica.healthCode('/primary')) === 200 && (await isPrimaryServer(replica)), {
      timeoutMs: 60_000,
      description: `${replica.name} primary`,
    });
  } finally {
    writing = false;
    await writer;
    leader.signal('SIGCONT');
  }
  const tookOverMs = Date.now() - frozenAt;
  const log = readFileSync(replica.logPath, 'utf8').slice(logStart);
  const held = log
    .split('\n')
    .filter((line) =>
      /My \(\w+\) wal position moved since last heart beat loop, \d+ seconds until leader race/.test(line),
    );
  expect(held.length).toBeGreaterThan(0);
  process.stdout.write(
    `primary_race_backoff: ${held.length} cycle(s) held back; ${replica.name} primary ${(tookOverMs / 1000).toFixed(1)} s after the freeze\n`,
  );
  await waitFor(
    async () => (await cluster.primaries()).join() === replica.name && (await leader.healthCode('/replica')) === 200,
    {
      timeoutMs: 60_000,
      description: `${leader.name} rejoined as a replica of ${replica.name}`,
    },
  );
});
