import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { sql } from '../helpers/sql';

/**
 * Permanent physical slots (`slots` in the dynamic configuration) on a real 3-node cluster: the
 * leader keeps them and publishes their positions in `/status`, every replica keeps a copy advanced
 * to them, so that after a switchover the new leader already holds the slot, near where the consumer
 * left it. Slots that `ignore_slots` covers are never dropped; other unknown physical slots are.
 */
jest.setTimeout(240_000);

let cluster: LocalCluster;
let baseDir: string;

const slotsOn = async (node: LocalNode) =>
  Object.fromEntries(
    (
      await sql<{ slot_name: string; restart_lsn: string | null }>(
        node,
        "SELECT slot_name, restart_lsn::text FROM pg_replication_slots WHERE slot_type = 'physical'",
      )
    ).map((row) => [row.slot_name, row.restart_lsn]),
  ) as Record<string, string | null>;

/** Bytes of WAL from `a` to `b`, read by the server. */
async function lsnDistance(node: LocalNode, from: string, to: string): Promise<number> {
  return Number(
    (await sql<{ bytes: string }>(node, 'SELECT pg_wal_lsn_diff($2::pg_lsn, $1::pg_lsn)::text AS bytes', [from, to]))[0]
      .bytes,
  );
}

beforeAll(async () => {
  baseDir = tmpDir('stator-slots-');
  cluster = await LocalCluster.start({ nodes: 3, baseDir, ttl: 10, loopWait: 2, retryTimeout: 4 });
  const leader = await cluster.waitForLeader(60_000);
  await cluster.waitForStreaming(
    cluster.nodes.filter((node) => node !== leader).map((node) => node.name),
    60_000,
  );
});

afterAll(async () => {
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

it("keeps a permanent slot on every node at the leader's position, keeps ignored slots and drops unknown ones", async () => {
  const leader = await cluster.waitForLeader(30_000);
  await sql(
    leader,
    "SELECT pg_create_physical_replication_slot('backup_tool', true), pg_create_physical_replication_slot('leftover', true)",
  );
  const patch = await fetch(`${leader.apiUrl}/config`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      slots: { archiver: { type: 'physical' } },
      ignore_slots: [{ name: 'backup_tool', type: 'physical' }],
    }),
  });
  expect(patch.status).toBe(200);

  await waitFor(
    async () => {
      const slots = await slotsOn(leader);
      return 'archiver' in slots && 'backup_tool' in slots && !('leftover' in slots);
    },
    { timeoutMs: 15_000, description: 'the leader keeping archiver and backup_tool, dropping leftover' },
  );

  // The archiver consumes WAL up to the current position: the leader's slot moves, and so do the replicas' copies.
  await sql(leader, 'CREATE TABLE IF NOT EXISTS filler AS SELECT generate_series(1, 50000) AS n');
  const target = (await sql<{ lsn: string }>(leader, 'SELECT pg_current_wal_lsn()::text AS lsn'))[0].lsn;
  await sql(leader, "SELECT pg_replication_slot_advance('archiver', $1::pg_lsn)", [target]);
  for (const replica of cluster.nodes.filter((node) => node !== leader)) {
    await waitFor(
      async () => {
        const position = (await slotsOn(replica)).archiver;
        return position !== undefined && position !== null && (await lsnDistance(leader, position, target)) <= 0;
      },
      { timeoutMs: 20_000, description: `${replica.name}'s archiver slot advanced to ${target}` },
    );
  }
});

it('still has the permanent slot, at least where it was, on the new leader after a switchover', async () => {
  const old = await cluster.waitForLeader(30_000);
  const before = (await slotsOn(old)).archiver!;
  const candidate = cluster.nodes.find((node) => node !== old)!;
  const response = await fetch(`${old.apiUrl}/switchover`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ leader: old.name, candidate: candidate.name }),
  });
  expect(response.status).toBe(200);
  const leader = await cluster.waitForLeader(30_000, [old.name]);
  const after = (await slotsOn(leader)).archiver;
  expect(after).toBeDefined();
  expect(await lsnDistance(leader, before, after!)).toBeGreaterThanOrEqual(0);
  // The former leader, now a replica, keeps its copy as well.
  await waitFor(async () => 'archiver' in (await slotsOn(old)), {
    timeoutMs: 20_000,
    description: `${old.name} keeping archiver as a replica`,
  });
});

it("takes Patroni's short form and cluster_type, and drops and creates again a permanent slot whose WAL was lost", async () => {
  const leader = await cluster.waitForLeader(30_000);
  const patchConfig = async (body: Record<string, unknown>) => {
    const response = await fetch(`${leader.apiUrl}/config`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect({ status: response.status, body: await response.text() }).toMatchObject({ status: 200 });
  };
  // A slot for the standby cluster only, left from before: this primary cluster drops it.
  await sql(leader, "SELECT pg_create_physical_replication_slot('only_standby', true)");
  // The slot may keep at most 1 MB of WAL (and no wal_keep_size holds more), so an idle one loses its WAL quickly.
  await patchConfig({
    slots: {
      short_form: 0,
      lagger: { type: 'physical' },
      only_primary: { type: 'physical', cluster_type: 'primary' },
      only_standby: { type: 'physical', cluster_type: 'standby' },
    },
    postgresql: { parameters: { max_slot_wal_keep_size: '1MB', wal_keep_size: '0' } },
  });
  await waitFor(
    async () => {
      const slots = await slotsOn(leader);
      return 'short_form' in slots && 'lagger' in slots && 'only_primary' in slots && !('only_standby' in slots);
    },
    { timeoutMs: 15_000, description: 'the leader keeping short_form, lagger and only_primary, dropping only_standby' },
  );
  await waitFor(
    async () =>
      (await sql<{ v: string }>(leader, "SELECT current_setting('max_slot_wal_keep_size') AS v"))[0].v === '1MB',
    { timeoutMs: 15_000, description: 'max_slot_wal_keep_size reloaded' },
  );

  const lostAt = Date.now();
  // WAL moves on past what the idle slot may keep; the checkpoint invalidates it (wal_status lost).
  await sql(leader, 'CREATE TABLE IF NOT EXISTS churn (n int)');
  for (let round = 0; round < 4; round++) {
    await sql(leader, 'INSERT INTO churn SELECT generate_series(1, 1000)');
    await sql(leader, 'SELECT pg_switch_wal()');
  }
  await sql(leader, 'CHECKPOINT');
  let dropped: { message?: string; data?: Record<string, unknown> } | undefined;
  await waitFor(
    async () => {
      const response = await fetch(
        `${leader.apiUrl}/events?${new URLSearchParams({ type: 'slot.dropped', limit: '1000' }).toString()}`,
      );
      const events = (await response.json()) as Array<{
        at: string;
        node: string;
        message?: string;
        data?: Record<string, unknown>;
      }>;
      dropped = events.find(
        (event) => event.node === leader.name && event.data?.slot === 'lagger' && Date.parse(event.at) >= lostAt - 1000,
      );
      return dropped !== undefined;
    },
    { timeoutMs: 20_000, description: 'the leader dropping lagger, whose WAL was lost' },
  );
  expect(dropped!.data).toMatchObject({ slot: 'lagger', wal_status: 'lost' });
  // Created again, reserving WAL from now on.
  await waitFor(
    async () => {
      const [row] = await sql<{ wal_status: string | null }>(
        leader,
        "SELECT wal_status FROM pg_replication_slots WHERE slot_name = 'lagger'",
      );
      return row?.wal_status === 'reserved';
    },
    { timeoutMs: 15_000, description: 'lagger created again on the leader, its WAL reserved' },
  );

  await patchConfig({
    slots: { short_form: null, lagger: null, only_primary: null, only_standby: null },
    postgresql: { parameters: { max_slot_wal_keep_size: null, wal_keep_size: null } },
  });
});

/** `/status` as the leader wrote it in etcd. */
async function statusKey(): Promise<{ optime?: number; slots?: Record<string, number>; retain_slots?: string[] }> {
  const response = await fetch(`http://${cluster.etcd.endpoint}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: Buffer.from(`/service/${cluster.scope}/status`).toString('base64') }),
  });
  const body = (await response.json()) as { kvs?: Array<{ value: string }> };
  return body.kvs?.[0] ? JSON.parse(Buffer.from(body.kvs[0].value, 'base64').toString()) : {};
}

const slotOf = (node: LocalNode) => node.name.toLowerCase().replace(/[^a-z0-9_]/g, '_');

it("keeps every other member's slot on each replica, advanced to the leader's published position, and lists them in /status", async () => {
  const leader = await cluster.waitForLeader(30_000);
  const replicas = cluster.nodes.filter((node) => node !== leader);
  await cluster.waitForStreaming(
    replicas.map((node) => node.name),
    60_000,
  );
  // /status: every member's slot (the leader's own at its WAL position) and retain_slots, as Patroni 4.1 writes them.
  await waitFor(
    async () => {
      const status = await statusKey();
      return (
        cluster.nodes.every((node) => typeof status.slots?.[slotOf(node)] === 'number') &&
        cluster.nodes.every((node) => status.retain_slots?.includes(slotOf(node)))
      );
    },
    { timeoutMs: 15_000, description: "/status listing every member's slot and retain_slots" },
  );

  await sql(leader, 'CREATE TABLE IF NOT EXISTS moving AS SELECT generate_series(1, 20000) AS n');
  const target = (await sql<{ lsn: string }>(leader, 'SELECT pg_current_wal_lsn()::text AS lsn'))[0].lsn;
  for (const replica of replicas) {
    const other = replicas.find((node) => node !== replica)!;
    await waitFor(
      async () => {
        const slots = await slotsOn(replica);
        const copy = slots[slotOf(other)];
        return (
          slotOf(leader) in slots &&
          copy !== undefined &&
          copy !== null &&
          (await lsnDistance(leader, copy, target)) <= 0
        );
      },
      {
        timeoutMs: 20_000,
        description: `${replica.name} keeping ${slotOf(leader)} and its copy of ${slotOf(other)} advanced to ${target}`,
      },
    );
  }
});

it('resets, on a former leader, the slots that hold an xmin from hot_standby_feedback but nothing streams from any more', async () => {
  const old = await cluster.waitForLeader(30_000);
  const patch = await fetch(`${old.apiUrl}/config`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ postgresql: { parameters: { hot_standby_feedback: 'on' } } }),
  });
  expect(patch.status).toBe(200);
  const xminOf = async (node: LocalNode, slot: string) =>
    (
      await sql<{ xmin: string | null }>(node, 'SELECT xmin::text FROM pg_replication_slots WHERE slot_name = $1', [
        slot,
      ])
    )[0]?.xmin;
  const candidate = cluster.nodes.find((node) => node !== old)!;
  await waitFor(async () => Boolean(await xminOf(old, slotOf(candidate))), {
    timeoutMs: 20_000,
    description: `${candidate.name}'s slot on ${old.name} holding an xmin`,
  });

  const since = Date.now();
  const response = await fetch(`${old.apiUrl}/switchover`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ leader: old.name, candidate: candidate.name }),
  });
  expect(response.status).toBe(200);
  await cluster.waitForLeader(30_000, [old.name]);
  await cluster.waitForStreaming([old.name], 60_000);
  // The new leader no longer streams from old: old's copy of its slot is created again, without an xmin.
  await waitFor(async () => (await xminOf(old, slotOf(candidate))) === null, {
    timeoutMs: 20_000,
    description: `${slotOf(candidate)} on ${old.name} without an xmin`,
  });
  const events = (await (
    await fetch(`${old.apiUrl}/events?${new URLSearchParams({ type: 'slot.dropped', limit: '1000' }).toString()}`)
  ).json()) as Array<{ at: string; node: string; data?: Record<string, unknown> }>;
  expect(
    events.find(
      (event) =>
        event.node === old.name && event.data?.slot === slotOf(candidate) && Date.parse(event.at) >= since - 1000,
    )?.data,
  ).toMatchObject({ xmin: true });
});
