import { execFileSync } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { killLeaderAndWait } from '../helpers/kill-leader';
import { descendantsOf } from '../../src/common/process-tree';
import { sql } from '../helpers/sql';
import { leaderLeaseTtl } from '../helpers/leader-lease';
import { readSyncKey, SyncKey } from '../helpers/sync-key';

/**
 * Synchronous replication on a real 3-node cluster (PostgreSQL 15, etcd), ttl 10, loop_wait 2:
 * synchronous_standby_names, `/sync` and the health checks agree; a commit waits for the standby;
 * a stopped standby is replaced (or, in strict mode, holds commits); a dead leader is replaced by
 * its synchronous standby with every acknowledged row.
 */
jest.setTimeout(240_000);

let cluster: LocalCluster;
let baseDir: string;

const syncKey = () => readSyncKey(cluster);

const standbyNames = async (node: LocalNode) =>
  (await sql<{ value: string }>(node, "SELECT pg_catalog.current_setting('synchronous_standby_names') AS value"))[0]
    ?.value;

async function patchConfig(node: LocalNode, patch: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${node.apiUrl}/config`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(patch),
  });
  expect(response.status).toBe(200);
}

/** Waits until `/sync` names exactly `standbys` (any order) with `leader`. */
async function waitForSync(leader: string, standbys: string[], timeoutMs = 30_000): Promise<void> {
  const wanted = [...standbys].sort().join(',') || null;
  await waitFor(
    async () => {
      const sync = await syncKey().catch(() => null);
      return sync?.leader === leader && (sync.sync_standby ?? null) === wanted;
    },
    { timeoutMs, description: `/sync = {leader: ${leader}, sync_standby: ${wanted}}` },
  );
}

/** An INSERT on its own connection: resolves when the commit returned, whatever it took. */
function insertRow(node: LocalNode, table: string, id: number): Promise<void> {
  const client = new Client({ connectionString: node.connectionString(), connectionTimeoutMillis: 2000 });
  client.on('error', () => undefined);
  return client
    .connect()
    .then(() => client.query(`INSERT INTO ${table} VALUES ($1)`, [id]))
    .then(() => undefined)
    .finally(() => client.end().catch(() => undefined));
}

beforeAll(async () => {
  baseDir = tmpDir('stator-sync-');
  // In Patroni's identifiers, so Debian's patronictl reads the same cluster.
  cluster = await LocalCluster.start({
    nodes: 3,
    baseDir,
    ttl: 10,
    loopWait: 2,
    retryTimeout: 3,
    compat: 'patroni',
    dcs: { synchronous_mode: true },
    // The restarted agent must find its primary still running: on a loaded machine (two spec files of clusters at
    // once) a restart took 4.5 s to reach the fence, past its 3 s default grace, and the fence rightly ended the term.
    sections: { fence: { agent_grace: 30 } },
  });
  await cluster.waitForHealthy(90_000);
});

afterAll(async () => {
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

it('one synchronous standby: synchronous_standby_names, /sync and the health checks agree', async () => {
  const leader = await cluster.waitForHealthy(30_000);
  await waitFor(async () => Boolean((await syncKey())?.sync_standby), {
    timeoutMs: 30_000,
    description: 'a synchronous standby in /sync',
  });
  const sync = (await syncKey())!;
  expect(sync.leader).toBe(leader.name);
  const standby = cluster.node(sync.sync_standby!);
  const other = cluster.nodes.find((node) => node !== leader && node !== standby)!;
  expect(await standbyNames(leader)).toBe(standby.name);
  const rows = await sql<{ application_name: string; sync_state: string }>(
    leader,
    'SELECT application_name, sync_state FROM pg_stat_replication ORDER BY 1',
  );
  expect(rows).toEqual(
    expect.arrayContaining([
      { application_name: standby.name, sync_state: 'sync' },
      { application_name: other.name, sync_state: 'async' },
    ]),
  );
  await waitFor(async () => (await standby.healthCode('/sync')) === 200 && (await other.healthCode('/async')) === 200, {
    timeoutMs: 10_000,
    description: 'the health checks following /sync',
  });
  expect(await standby.healthCode('/async')).toBe(503);
  expect(await other.healthCode('/sync')).toBe(503);
  expect(await leader.healthCode('/read-only-sync')).toBe(200);
  const document = (await (await fetch(`${standby.apiUrl}/patroni`)).json()) as Record<string, unknown>;
  expect(document.sync_standby).toBe(true);
  const metrics = await (await fetch(`${standby.apiUrl}/metrics`)).text();
  expect(metrics).toMatch(/^patroni_sync_standby\{[^}]*\} 1$/m);
});

it("Debian's patronictl lists the synchronous standby as Sync Standby", async () => {
  const leader = await cluster.waitForHealthy(30_000);
  const standby = (await syncKey())!.sync_standby!;
  const ctlConfig = join(baseDir, 'patronictl.yml');
  writeFileSync(ctlConfig, `scope: ${cluster.scope}\nnamespace: /service\netcd3:\n  hosts: ${cluster.etcd.endpoint}\n`);
  const table = execFileSync('patronictl', ['-c', ctlConfig, 'list'], { encoding: 'utf8', timeout: 30_000 });
  const roles = Object.fromEntries(
    table
      .split('\n')
      .map((line) => line.split('|').map((cell) => cell.trim()))
      .filter((cells) => cells.length > 3 && /^node\d$/.test(cells[1]))
      .map((cells) => [cells[1], cells[3]]),
  );
  const other = cluster.nodes.find((node) => node !== leader && node.name !== standby)!;
  expect(roles).toEqual({ [leader.name]: 'Leader', [standby]: 'Sync Standby', [other.name]: 'Replica' });
});

it('a commit waits for the synchronous standby; a stopped standby is replaced by the other one', async () => {
  const leader = await cluster.waitForHealthy(30_000);
  const standby = cluster.node((await syncKey())!.sync_standby!);
  const other = cluster.nodes.find((node) => node !== leader && node !== standby)!;
  await sql(leader, 'CREATE TABLE IF NOT EXISTS sync_rows (id int)');
  // With replay paused the standby still confirms the flush: commits go on (synchronous_commit = on).
  await insertRow(leader, 'sync_rows', 1);

  await standby.stop();
  await waitForSync(leader.name, [other.name]);
  expect(await standbyNames(leader)).toBe(other.name);
  await insertRow(leader, 'sync_rows', 2);
  const [row] = await sql<{ n: string }>(other, 'SELECT count(*) AS n FROM sync_rows');
  expect(row.n).toBe('2');

  standby.start();
  await cluster.waitForHealthy(60_000);
});

it('strict mode: with no standby left a commit waits, and goes through once a standby is back', async () => {
  const leader = await cluster.waitForHealthy(30_000);
  await patchConfig(leader, { synchronous_mode_strict: true });
  const replicas = cluster.nodes.filter((node) => node !== leader);
  for (const replica of replicas) await replica.stop();
  await waitFor(async () => (await syncKey())?.sync_standby === null || (await standbyNames(leader)) !== '', {
    timeoutMs: 30_000,
    description: 'strict mode holding',
  });

  let committed = false;
  const pending = insertRow(leader, 'sync_rows', 3).then(() => {
    committed = true;
  });
  await new Promise((resolve) => setTimeout(resolve, 3000));
  expect(committed).toBe(false);
  expect(await standbyNames(leader)).not.toBe('');

  replicas[0].start();
  await waitFor(() => committed, {
    timeoutMs: 60_000,
    description: 'the waiting commit acknowledged once a standby is back',
  });
  await pending;
  const [row] = await sql<{ n: string }>(replicas[0], 'SELECT count(*) AS n FROM sync_rows WHERE id = 3');
  expect(row.n).toBe('1');
  replicas[1].start();
  await patchConfig(leader, { synchronous_mode_strict: null });
  await cluster.waitForHealthy(60_000);
});

it('two synchronous standbys with synchronous_node_count 2', async () => {
  const leader = await cluster.waitForHealthy(30_000);
  await patchConfig(leader, { synchronous_node_count: 2 });
  const replicas = cluster.nodes.filter((node) => node !== leader).map((node) => node.name);
  await waitForSync(leader.name, replicas);
  expect(await standbyNames(leader)).toBe(`2 (${[...replicas].sort().join(',')})`);
  for (const name of replicas)
    await waitFor(async () => (await cluster.node(name).healthCode('/sync')) === 200, {
      timeoutMs: 10_000,
      description: `${name} /sync 200`,
    });
  await patchConfig(leader, { synchronous_node_count: 1 });
  await waitFor(async () => (await syncKey())?.sync_standby?.split(',').length === 1, {
    timeoutMs: 30_000,
    description: 'one synchronous standby again',
  });
});

it('kill -9 of the leader agent and postmaster: the synchronous standby takes over with every acknowledged row', async () => {
  const leader = await cluster.waitForHealthy(30_000);
  await waitFor(async () => Boolean((await syncKey())?.sync_standby), {
    timeoutMs: 30_000,
    description: 'a synchronous standby',
  });
  const standby = cluster.node((await syncKey())!.sync_standby!);
  let acknowledged = 0;
  for (let id = 100; id < 150; id++) {
    await insertRow(leader, 'sync_rows', id);
    acknowledged++;
  }
  const { newLeader } = await killLeaderAndWait(cluster, leader, { loss: 'power-cut', timeoutMs: 60_000 });
  expect(newLeader.name).toBe(standby.name);
  const [row] = await sql<{ n: string }>(newLeader, 'SELECT count(*) AS n FROM sync_rows WHERE id >= 100');
  expect(Number(row.n)).toBe(acknowledged);
  leader.start();
  await cluster.waitForHealthy(90_000);
});

it('an agent restarted beside its running primary never relaxes synchronous_standby_names (safety rule 5)', async () => {
  const leader = await cluster.waitForHealthy(30_000);
  await waitFor(async () => Boolean((await syncKey())?.sync_standby), {
    timeoutMs: 30_000,
    description: 'a synchronous standby',
  });
  const before = await standbyNames(leader);
  expect(before).not.toBe('');
  // The new agent must refresh the lock before the lease ends, or the fence ends the term: beside other cluster specs
  // (CI) a restart took 9 to 11 s to come up, past ttl 10. Its subject is the restarted agent, not the lease: ttl 30.
  await patchConfig(leader, { ttl: 30 });
  await waitFor(async () => (await leaderLeaseTtl(cluster)) === 30, { description: 'the leader key on a 30 s lease' });
  // Each reading names the server's role with the value: a replica's value commits nothing.
  const seen: string[] = [];
  const startedAt = Date.now();
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      const [reading] = await sql<{ value: string; replica: boolean }>(
        leader,
        "SELECT pg_catalog.current_setting('synchronous_standby_names') AS value, pg_catalog.pg_is_in_recovery() AS replica",
      ).catch(() => []);
      const entry = reading && `${reading.replica ? 'replica' : 'primary'} ${JSON.stringify(reading.value)}`;
      if (entry && seen.at(-1)?.endsWith(entry) !== true) seen.push(`+${Date.now() - startedAt} ms ${entry}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  await leader.killAgent();
  leader.start();
  await cluster.waitForHealthy(60_000);
  await new Promise((resolve) => setTimeout(resolve, 3000));
  watching = false;
  await watcher;
  await patchConfig(leader, { ttl: 10 });
  await waitFor(async () => (await leaderLeaseTtl(cluster)) === 10, { description: 'the leader key on a 10 s lease' });
  // The placeholder alone (no standby can confirm: commits wait) is stricter, not relaxed: a restarted agent writes
  // it when it must write the configuration before its first reading of the running primary, on a loaded machine.
  const values = [
    ...new Set(
      seen
        .map((entry) => entry.replace(/^\+\d+ ms /, ''))
        .filter((entry) => entry !== 'primary "__patroni_strict_sync_replica_placeholder__"'),
    ),
  ];
  if (values.length !== 1) console.log(`synchronous_standby_names after the agent's restart:\n${seen.join('\n')}`);
  expect(values).toEqual([`primary ${JSON.stringify(before)}`]);
});

it('primary_stop_timeout: a switchover whose fast shutdown hangs on a frozen replica stops the primary immediately after it', async () => {
  const leader = await cluster.waitForHealthy(30_000);
  await waitFor(async () => Boolean((await syncKey())?.sync_standby), {
    timeoutMs: 30_000,
    description: 'a synchronous standby',
  });
  const candidate = cluster.node((await syncKey())!.sync_standby!);
  const frozen = cluster.nodes.find((node) => node !== leader && node !== candidate)!;
  const patchedAt = statSync(leader.logPath).size;
  const leaderLogSince = (offset: number) => readFileSync(leader.logPath).subarray(offset).toString('utf8');
  await patchConfig(leader, { primary_stop_timeout: 1 });
  await waitFor(() => leaderLogSince(patchedAt).split('the leader with the lock').length > 2, {
    timeoutMs: 10_000,
    description: 'two cycles of the leader after the PATCH',
  });
  // A fast shutdown waits until every WAL sender's standby confirmed the shutdown checkpoint: a frozen one never does
  // (until wal_sender_timeout, 60 s). Without primary_stop_timeout a switchover's stop waits pg_ctl_timeout (60 s), past the API's 20 s.
  const frozenServer = [frozen.postmasterPid()!, ...descendantsOf(frozen.postmasterPid()!)];
  for (const pid of frozenServer) process.kill(pid, 'SIGSTOP');
  try {
    const switchover = await fetch(`${leader.apiUrl}/switchover`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ leader: leader.name, candidate: candidate.name }),
    });
    expect({ status: switchover.status, text: await switchover.text() }).toEqual({
      status: 200,
      text: `Successfully switched over to "${candidate.name}"`,
    });
    await waitFor(async () => (await candidate.healthCode('/primary')) === 200, {
      timeoutMs: 30_000,
      description: `${candidate.name} the new primary`,
    });
    expect(leaderLogSince(patchedAt)).toContain('postgres did not stop (fast) within 1000 ms: immediate shutdown');
  } finally {
    for (const pid of frozenServer) process.kill(pid, 'SIGCONT');
  }
  await patchConfig(candidate, { primary_stop_timeout: null });
  await cluster.waitForHealthy(60_000);
});

it('turning the mode off deletes /sync and gives the user setting back', async () => {
  const leader = await cluster.waitForHealthy(30_000);
  await patchConfig(leader, { synchronous_mode: null });
  await waitFor(async () => (await syncKey()) === null && (await standbyNames(leader)) === '', {
    timeoutMs: 30_000,
    description: '/sync deleted, synchronous_standby_names empty',
  });
});

describe('quorum commit', () => {
  let quorumCluster: LocalCluster;
  let quorumDir: string;

  beforeAll(async () => {
    await cluster?.stop();
    quorumDir = tmpDir('stator-quorum-');
    quorumCluster = await LocalCluster.start({
      nodes: 3,
      baseDir: quorumDir,
      ttl: 10,
      loopWait: 2,
      retryTimeout: 3,
      dcs: { synchronous_mode: 'quorum' },
    });
    cluster = quorumCluster;
    await cluster.waitForHealthy(90_000);
  });

  afterAll(async () => {
    await quorumCluster?.stop();
    if (quorumDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(quorumDir);
  });

  /** The quorum invariant on one reading: any acknowledging set of standbys meets any electing set. */
  function invariantHolds(sync: SyncKey, names: string): boolean {
    const voters = (sync.sync_standby ?? '').split(',').filter(Boolean);
    const match = /^ANY (\d+) \((.*)\)$/.exec(names);
    const numsync = match ? Number(match[1]) : 0;
    const listed = match ? match[2].split(',').filter((n) => !n.startsWith('__patroni')) : [];
    return (sync.quorum ?? 0) + numsync >= new Set([...voters, ...listed]).size;
  }

  it('ANY 1 of 2: /sync holds both standbys with quorum 1, and /quorum answers on both', async () => {
    const leader = await cluster.waitForHealthy(30_000);
    const standbys = cluster.nodes
      .filter((node) => node !== leader)
      .map((node) => node.name)
      .sort();
    await waitForSync(leader.name, standbys);
    expect((await syncKey())!.quorum).toBe(1);
    expect(await standbyNames(leader)).toBe(`ANY 1 (${standbys.join(',')})`);
    for (const name of standbys) {
      await waitFor(async () => (await cluster.node(name).healthCode('/quorum')) === 200, {
        timeoutMs: 10_000,
        description: `${name} /quorum 200`,
      });
      expect(await cluster.node(name).healthCode('/async')).toBe(503);
      expect(await cluster.node(name).healthCode('/sync')).toBe(503);
    }
    const metrics = await (await fetch(`${cluster.node(standbys[0]).apiUrl}/metrics`)).text();
    expect(metrics).toMatch(/^stator_quorum_standby\{[^}]*\} 1$/m);
  });

  it('the quorum invariant holds at every reading while a standby leaves and comes back', async () => {
    const leader = await cluster.waitForHealthy(30_000);
    const [gone, staying] = cluster.nodes.filter((node) => node !== leader);
    const readings: string[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        // Two reads are never one instant: /sync counts only when the setting is the same before and after it.
        const names = await standbyNames(leader).catch(() => null);
        const sync = await syncKey().catch(() => null);
        const namesAfter = await standbyNames(leader).catch(() => null);
        if (sync && names !== null && names === namesAfter) {
          const reading = `${JSON.stringify(sync)} ${names}`;
          if (readings[readings.length - 1] !== reading) readings.push(reading);
          if (!invariantHolds(sync, names)) throw new Error(`quorum invariant broken: ${reading}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    await gone.stop();
    await waitForSync(leader.name, [staying.name]);
    gone.start();
    const both = [gone.name, staying.name].sort();
    await waitForSync(leader.name, both, 60_000);
    // The watcher reads every 50 ms: it stops once it has seen the final state too, not when /sync alone has it.
    await waitFor(() => readings[readings.length - 1]?.endsWith(`ANY 1 (${both.join(',')})`) ?? false, {
      timeoutMs: 10_000,
      description: 'the watcher reading the final state',
    });
    watching = false;
    await watcher;
    // Left and came back: the first and the last readings list both, and at least one in between does not.
    expect(readings.length).toBeGreaterThan(2);
  });

  it('kill -9 of the leader agent and postmaster: a standby that reaches quorum takes over with every acknowledged row', async () => {
    const leader = await cluster.waitForHealthy(30_000);
    await sql(leader, 'CREATE TABLE IF NOT EXISTS quorum_rows (id int)');
    for (let id = 0; id < 50; id++) await insertRow(leader, 'quorum_rows', id);
    const { newLeader } = await killLeaderAndWait(cluster, leader, { loss: 'power-cut', timeoutMs: 60_000 });
    const [row] = await sql<{ n: string }>(newLeader, 'SELECT count(*) AS n FROM quorum_rows');
    expect(row.n).toBe('50');
    leader.start();
    await cluster.waitForHealthy(90_000);
  });
});
