import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { killLeaderAndWait } from '../helpers/kill-leader';
import { RecordedEvent } from '../../src/events/event';
import { isPrimaryServer, sql } from '../helpers/sql';

/**
 * A permanent logical slot (`slots: {cdc: {type: logical, ...}}`) on a real 3-node cluster with a
 * real change-data-capture consumer, pg_recvlogical: the leader creates the slot, each replica keeps a
 * copy advanced to where the consumer confirmed, and after the leader is lost the consumer goes on
 * from the new leader without losing a change (changes after its last confirmed position may come
 * again, as logical decoding promises).
 */
jest.setTimeout(240_000);

const PG_BIN = '/usr/lib/postgresql/15/bin';
let cluster: LocalCluster;
let baseDir: string;
const consumers: ChildProcess[] = [];

/** pg_recvlogical on `node`'s slot cdc, writing test_decoding's lines to `file` and confirming every second. */
function consume(node: LocalNode, file: string): ChildProcess {
  const log = openSync(`${file}.log`, 'a');
  const consumer = spawn(
    join(PG_BIN, 'pg_recvlogical'),
    ['-d', node.connectionString(), '-S', 'cdc', '--start', '-f', file, '-F', '1', '-s', '1', '-v'],
    { stdio: ['ignore', log, log] },
  );
  closeSync(log);
  consumers.push(consumer);
  return consumer;
}

async function stopConsumer(consumer: ChildProcess): Promise<void> {
  if (consumer.exitCode !== null) return;
  const exited = new Promise((resolve) => consumer.once('exit', resolve));
  consumer.kill('SIGINT'); // pg_recvlogical flushes and confirms what it wrote, then exits
  await exited;
}

/** The values of n that test_decoding printed for inserts into shipped. */
function consumed(file: string): Set<number> {
  if (!existsSync(file)) return new Set();
  return new Set(
    [...readFileSync(file, 'utf8').matchAll(/table public\.shipped: INSERT: n\[integer\]:(\d+)/g)].map((match) =>
      Number(match[1]),
    ),
  );
}

const confirmedOn = async (node: LocalNode) =>
  (
    await sql<{ lsn: string | null }>(
      node,
      "SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = 'cdc'",
    )
  )[0]?.lsn ?? null;

const lsnAtLeast = async (node: LocalNode, lsn: string, floor: string) =>
  (await sql<{ ok: boolean }>(node, 'SELECT $1::pg_lsn >= $2::pg_lsn AS ok', [lsn, floor]))[0].ok;

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

beforeAll(async () => {
  baseDir = tmpDir('stator-logical-');
  cluster = await LocalCluster.start({
    nodes: 3,
    baseDir,
    ttl: 10,
    loopWait: 2,
    retryTimeout: 4,
    dcs: {
      postgresql: { parameters: { wal_level: 'logical' } },
      slots: { cdc: { type: 'logical', database: 'postgres', plugin: 'test_decoding' } },
    },
  });
  await cluster.waitForHealthy(60_000);
});

afterAll(async () => {
  await Promise.all(consumers.map(stopConsumer));
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

it('a pg_recvlogical consumer goes on from the new leader after a failover without losing a change', async () => {
  const leader = await cluster.waitForHealthy(60_000);
  const replicas = cluster.nodes.filter((node) => node !== leader);
  await waitFor(async () => (await confirmedOn(leader)) !== null, {
    timeoutMs: 20_000,
    description: 'the leader creating the permanent logical slot cdc',
  });
  await sql(leader, 'CREATE TABLE shipped (n int PRIMARY KEY)');

  // The consumer reads rows from the leader and confirms them, while the primary checkpoints now and then: its slot
  // moves on to WAL the replicas hold, and they can copy it (before, a copy could never be decoded on a replica).
  const before = join(baseDir, 'before-failover.txt');
  const first = consume(leader, before);
  let n = 0;
  const copied = async () => {
    const confirmed = await confirmedOn(leader);
    for (const replica of replicas) {
      const copy = await confirmedOn(replica).catch(() => null);
      if (confirmed === null || copy === null || !(await lsnAtLeast(leader, copy, confirmed))) return false;
    }
    return true;
  };
  const everyReplicaHasACopy = async () =>
    (await Promise.all(replicas.map((replica) => confirmedOn(replica).catch(() => null)))).every(
      (copy) => copy !== null,
    );
  await waitFor(
    async () => {
      await sql(leader, 'INSERT INTO shipped VALUES ($1)', [++n]);
      await sql(leader, 'CHECKPOINT');
      return consumed(before).has(n - 1) && (await everyReplicaHasACopy());
    },
    { timeoutMs: 90_000, intervalMs: 1000, description: 'every replica holding a copy of cdc' },
  );
  await stopConsumer(first);
  // What the consumer confirmed when it stopped reaches the copies too.
  await waitFor(copied, { timeoutMs: 20_000, description: 'the copies at the final confirmed position' });

  // Ten rows are written but not yet consumed when the leader is lost.
  const unconsumed = range(n + 1, n + 10);
  for (const row of unconsumed) await sql(leader, 'INSERT INTO shipped VALUES ($1)', [row]);
  for (const replica of replicas) {
    await waitFor(
      async () =>
        Number((await sql<{ n: string }>(replica, 'SELECT count(*)::text AS n FROM shipped'))[0].n) === n + 10,
      { timeoutMs: 20_000, description: `${replica.name} replaying row ${n + 10}` },
    );
  }
  const { newLeader } = await killLeaderAndWait(cluster, leader, { loss: 'power-cut', timeoutMs: 60_000 });
  // /primary answers 200 from the lock holder as the reference does, before its promotion ends: writes wait for it.
  await waitFor(() => isPrimaryServer(newLeader), { timeoutMs: 30_000, description: `${newLeader.name} promoted` });

  // The consumer resumes on the new leader's slot: every change after what it confirmed comes, none is lost.
  const after = join(baseDir, 'after-failover.txt');
  consume(newLeader, after);
  const last = n + 11;
  await sql(newLeader, 'INSERT INTO shipped VALUES ($1)', [last]);
  await waitFor(() => consumed(after).has(last), {
    timeoutMs: 30_000,
    description: `pg_recvlogical receiving row ${last} from the new leader`,
  });
  const received = consumed(after);
  expect([...unconsumed, last].filter((row) => !received.has(row))).toEqual([]);

  const events = (await (
    await fetch(`${newLeader.apiUrl}/events?stream=cluster&limit=1000`)
  ).json()) as RecordedEvent[];
  const slotEvents = events
    .filter((event) => event.type.startsWith('slot.') && event.data?.type === 'logical')
    .map((event) => `${event.type} ${event.node}`);
  expect(slotEvents).toEqual(
    expect.arrayContaining([
      `slot.created ${leader.name}`,
      `slot.copied ${replicas[0].name}`,
      `slot.copied ${replicas[1].name}`,
    ]),
  );
});

it('drops a logical slot that is neither permanent nor in ignore_slots, and keeps the ignored one', async () => {
  const leader = await cluster.waitForLeader(30_000);
  const since = Date.now();
  const patch = await fetch(`${leader.apiUrl}/config`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ignore_slots: [{ name: 'tool_slot', plugin: 'test_decoding' }] }),
  });
  expect(patch.status).toBe(200);
  await waitFor(
    async () => {
      const response = await fetch(`${leader.apiUrl}/config`);
      return JSON.stringify(await response.json()).includes('tool_slot');
    },
    { timeoutMs: 10_000, description: 'ignore_slots stored' },
  );
  await sql(
    leader,
    "SELECT pg_create_logical_replication_slot('tool_slot', 'test_decoding'), pg_create_logical_replication_slot('stray_slot', 'test_decoding')",
  );
  const logicalSlots = async () =>
    (
      await sql<{ slot_name: string }>(
        leader,
        "SELECT slot_name FROM pg_replication_slots WHERE slot_type = 'logical' ORDER BY slot_name",
      )
    ).map((row) => row.slot_name);
  await waitFor(async () => !(await logicalSlots()).includes('stray_slot'), {
    timeoutMs: 15_000,
    description: 'the leader dropping stray_slot',
  });
  expect(await logicalSlots()).toEqual(['cdc', 'tool_slot']);
  const events = (await (
    await fetch(`${leader.apiUrl}/events?${new URLSearchParams({ type: 'slot.dropped', limit: '1000' }).toString()}`)
  ).json()) as RecordedEvent[];
  const drops = events.filter(
    (event) => event.node === leader.name && event.data?.type === 'logical' && Date.parse(event.at) >= since - 1000,
  );
  expect(drops.map((event) => event.data?.slot)).toEqual(['stray_slot']);
});
