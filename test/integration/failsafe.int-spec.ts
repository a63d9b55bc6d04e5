import { readFileSync, statSync } from 'node:fs';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { isPrimaryServer, sql } from '../helpers/sql';

/**
 * DCS failsafe mode on a real 3-node cluster (PostgreSQL 15, etcd), ttl 10, loop_wait 2: etcd frozen
 * for longer than two ttls. While both replicas' agents answer, the primary keeps accepting writes;
 * with one replica's agent gone, it demotes as without the mode, and nobody else promotes. With
 * retry_timeout below loop_wait, the frozen etcd costs each cycle one retry_timeout and the cycles keep loop_wait's cadence.
 * Meanwhile the replicas keep their copies of a permanent slot at the positions the leader's failsafe calls carry,
 * and the leader moves its slot for node3 (cascading from node2) to the WAL position node3 answers those calls with.
 */
jest.setTimeout(240_000);

let cluster: LocalCluster;
let baseDir: string;

beforeAll(async () => {
  baseDir = tmpDir('stator-failsafe-');
  // node3 cascades from node2 (dcs_failsafe_mode.feature's postgres-2): the leader's slot for it is idle.
  cluster = await LocalCluster.start({
    nodes: 3,
    baseDir,
    ttl: 10,
    loopWait: 2,
    retryTimeout: 3,
    dcs: { failsafe_mode: true, slots: { fs_archiver: 0 } },
    tags: { 3: { replicatefrom: 'node2' } },
  });
  const leader = await cluster.waitForHealthy(90_000);
  if (leader.name !== 'node1') {
    // node2 and node3 must be replicas for node3 to cascade.
    const response = await fetch(`${leader.apiUrl}/switchover`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ leader: leader.name, candidate: 'node1' }),
    });
    expect(response.status).toBe(200);
    await waitFor(async () => (await cluster.waitForHealthy(30_000)).name === 'node1', {
      timeoutMs: 40_000,
      description: 'node1 the leader after the switchover',
    });
  }
});

afterAll(async () => {
  cluster?.etcd.resume();
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

/** `0/3000060` → its byte position. */
const lsnBytes = (lsn: string) => {
  const [high, low] = lsn.split('/');
  return parseInt(high, 16) * 2 ** 32 + parseInt(low, 16);
};

const failsafeKey = async (node = cluster.nodes[0]) => {
  const response = await fetch(`${node.apiUrl}/failsafe`);
  return response.status === 200 ? ((await response.json()) as Record<string, string>) : null;
};

it('publishes every member in /failsafe', async () => {
  await waitFor(async () => Object.keys((await failsafeKey()) ?? {}).length === 3, {
    timeoutMs: 20_000,
    description: 'GET /failsafe naming the three members',
  });
  expect(Object.keys((await failsafeKey())!).sort()).toEqual(['node1', 'node2', 'node3']);
});

const restartLsn = async (node: LocalNode, slot: string) =>
  (
    await sql<{ lsn: string | null }>(
      node,
      'SELECT restart_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1',
      [slot],
    )
  )[0]?.lsn ?? null;

it("etcd frozen: the replicas advance their copies of a permanent slot to the positions the leader's failsafe calls carry; the leader advances its slot for the cascading node3 to the position node3 answers with", async () => {
  const leader = await cluster.waitForHealthy(30_000);
  const [, node2, node3] = cluster.nodes;
  expect(leader.name).toBe('node1');
  await waitFor(
    async () =>
      (
        await sql<{ n: string }>(
          node2,
          "SELECT count(*) AS n FROM pg_stat_replication WHERE application_name = 'node3' AND state = 'streaming'",
        )
      )[0].n === '1',
    {
      timeoutMs: 30_000,
      description: 'node3 streaming from node2',
    },
  );
  await waitFor(async () => Object.keys((await failsafeKey(leader)) ?? {}).length === 3, {
    timeoutMs: 10_000,
    description: "the leader's own view of /failsafe naming all three",
  });
  await sql(leader, 'CREATE TABLE IF NOT EXISTS archived (n int)');
  await cluster.etcd.pause();
  try {
    // The archiver consumes WAL while no /status can be written: only the failsafe calls carry the slot's new position.
    await sql(leader, 'INSERT INTO archived SELECT generate_series(1, 1000)');
    const target = (await sql<{ lsn: string }>(leader, 'SELECT pg_current_wal_lsn()::text AS lsn'))[0].lsn;
    await sql(leader, "SELECT pg_replication_slot_advance('fs_archiver', $1::pg_lsn)", [target]);
    for (const replica of cluster.nodes.filter((node) => node !== leader)) {
      await waitFor(
        async () => {
          const [copy] = await sql<{ reached: boolean }>(
            replica,
            "SELECT restart_lsn >= $1::pg_lsn AS reached FROM pg_replication_slots WHERE slot_name = 'fs_archiver'",
            [target],
          );
          return copy?.reached === true;
        },
        {
          timeoutMs: 15_000,
          description: `${replica.name}'s fs_archiver copy advanced to ${target} while etcd is frozen`,
        },
      );
    }
    // node3's WAL comes through node2, so nothing streams from the leader's slot for it: only node3's answers
    // to the failsafe calls (their `lsn` header) tell the leader how far node3 got. Before, it stayed put until etcd was back.
    const before = await restartLsn(leader, 'node3');
    await waitFor(
      async () => {
        const [slot] = await sql<{ reached: boolean }>(
          leader,
          "SELECT restart_lsn >= $1::pg_lsn AS reached FROM pg_replication_slots WHERE slot_name = 'node3'",
          [target],
        );
        return slot?.reached === true;
        // Each round is a cycle that first spends retry_timeout on the frozen etcd, and node3's answer is its last reading:
        // on a loaded machine the first rounds may carry a position from before the WAL reached it.
      },
      {
        timeoutMs: 40_000,
        description: `the leader's slot for node3 (at ${before} when etcd froze) advanced to ${target} while etcd is frozen`,
      },
    );
    // The wire: a replica answers a failsafe call with its received/replayed position as a decimal byte count.
    const answer = await fetch(`${node3.apiUrl}/failsafe`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: leader.name,
        conn_url: leader.connectionString(),
        api_url: `${leader.apiUrl}/patroni`,
      }),
    });
    expect(answer.status).toBe(200);
    expect(await answer.text()).toBe('Accepted');
    const [{ received }] = await sql<{ received: string }>(
      node3,
      "SELECT (GREATEST(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()) - '0/0'::pg_lsn)::text AS received",
    );
    expect(Number(answer.headers.get('lsn'))).toBeGreaterThanOrEqual(lsnBytes(target));
    expect(Number(answer.headers.get('lsn'))).toBeLessThanOrEqual(Number(received));
    expect(await isPrimaryServer(leader)).toBe(true);
  } finally {
    cluster.etcd.resume();
  }
  await cluster.waitForHealthy(60_000);
});

it('etcd frozen with one replica agent gone: the primary demotes, and no node runs as primary until etcd is back', async () => {
  const leader = await cluster.waitForHealthy(30_000);
  // The leader calls the members its last read of /failsafe named, and rewrites the key from the member keys it
  // reads. An earlier outage expired every lease; until each member key is back, the leader's next cycle would
  // leave that member out of /failsafe, and not call it. So: every member key in the leader's view, and the key naming all three.
  await waitFor(
    async () => {
      const members =
        ((await (await fetch(`${leader.apiUrl}/cluster`)).json()) as { members?: unknown[] }).members ?? [];
      return members.length === 3 && Object.keys((await failsafeKey(leader)) ?? {}).length === 3;
    },
    { timeoutMs: 20_000, description: "the leader's view holding every member key and /failsafe naming all three" },
  );
  const gone = cluster.nodes.find((node) => node !== leader)!;
  await gone.killAgent();
  await cluster.etcd.pause();
  const frozenAt = Date.now();
  try {
    await waitFor(async () => !(await isPrimaryServer(leader)), {
      timeoutMs: 30_000,
      description: 'the leader no longer a primary',
    });
    const demotedAfter = Date.now() - frozenAt;
    expect(demotedAfter).toBeLessThan(15_000);
    // As the reference's offline demote: back up read-only (in recovery, no upstream) while etcd stays frozen.
    await waitFor(
      async () =>
        (await sql<{ recovery: boolean }>(leader, 'SELECT pg_is_in_recovery() AS recovery').catch(() => []))[0]
          ?.recovery === true,
      {
        timeoutMs: 15_000,
        description: 'the former leader running read-only while etcd is frozen',
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    for (const node of cluster.nodes) expect(await isPrimaryServer(node)).toBe(false);
  } finally {
    cluster.etcd.resume();
    gone.start();
  }
  await cluster.waitForHealthy(90_000);
});

/** The agent's log lines written since `offset` (a byte count taken with logSize). */
const logSince = (node: LocalNode, offset: number) =>
  readFileSync(node.logPath).subarray(offset).toString('utf8').split('\n').filter(Boolean);
const logSize = (node: LocalNode) => statSync(node.logPath).size;
/** The log's `2026-11-27 22:39:27,017` stamp in ms; only differences between stamps are used. */
const stampMs = (line: string) => Date.parse(`${line.slice(0, 10)}T${line.slice(11, 23).replace(',', '.')}Z`);

it('etcd frozen for 25 s: the primary keeps acknowledging writes while both replicas answer it, deciding every loop_wait', async () => {
  const leader = await cluster.waitForHealthy(30_000);
  await sql(leader, 'CREATE TABLE IF NOT EXISTS failsafe_rows (id int)');
  // retry_timeout 3 -> 1 through /config: a cycle with etcd frozen now fails its read after 1 s and keeps loop_wait's cadence.
  const patchedAt = logSize(leader);
  const patch = await fetch(`${leader.apiUrl}/config`, {
    method: 'PATCH',
    body: JSON.stringify({ retry_timeout: 1 }),
    headers: { 'content-type': 'application/json' },
  });
  expect(patch.status).toBe(200);
  await waitFor(
    () => logSince(leader, patchedAt).filter((line) => line.includes('the leader with the lock')).length >= 2,
    {
      timeoutMs: 10_000,
      description: 'two cycles of the leader after the PATCH',
    },
  );
  const frozenAt = logSize(leader);
  await cluster.etcd.pause();
  const started = Date.now();
  let written = 0;
  try {
    while (Date.now() - started < 25_000) {
      await sql(leader, 'INSERT INTO failsafe_rows VALUES ($1)', [written]);
      written++;
      expect(await leader.healthCode('/primary')).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const status = (await leader.status())!;
    expect(status.failsafe_mode_is_active).toBe(true);
    const metrics = await (await fetch(`${leader.apiUrl}/metrics`)).text();
    expect(metrics).toMatch(/^stator_failsafe_mode_is_active\{[^}]*\} 1$/m);
  } finally {
    cluster.etcd.resume();
  }
  const decisions = logSince(leader, frozenAt).filter((line) =>
    line.includes('continue to run as a leader because failsafe mode is enabled'),
  );
  const gaps = decisions.slice(1).map((line, i) => stampMs(line) - stampMs(decisions[i]));
  // Each call waiting its own retry_timeout (the configuration file's 3 s, not /config's 1 s) made every cycle 3 s and "Loop time exceeded".
  expect(logSince(leader, frozenAt).filter((line) => line.includes('Loop time exceeded'))).toEqual([]);
  expect(decisions.length).toBeGreaterThanOrEqual(10);
  expect(gaps.filter((gap) => gap > 2_800)).toEqual([]);
  expect(written).toBeGreaterThan(30);
  const after = await cluster.waitForHealthy(60_000);
  expect(after.name).toBe(leader.name);
  const [row] = await sql<{ n: string }>(leader, 'SELECT count(*) AS n FROM failsafe_rows');
  expect(Number(row.n)).toBe(written);
});
