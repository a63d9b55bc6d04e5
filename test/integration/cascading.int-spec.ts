import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { sql } from '../helpers/sql';

/**
 * Cascading replication on a real 3-node cluster: node3 carries `replicatefrom: node2`, so it
 * streams from node2 through a slot there, and when node2 stops, node3 re-points to the leader by
 * itself and streams again. As in Patroni 4.1 (`member_slots_ttl` above 0), every node that may lead
 * keeps a slot for every other member, the leader's for node3 included (advanced to node3's own
 * position), so whichever leads next already holds them; node3 (`nofailover`) keeps none.
 */
jest.setTimeout(180_000);

let cluster: LocalCluster;
let baseDir: string;

/** The PostgreSQL port this node's WAL receiver is connected to, or null while it does not stream. */
async function streamingFrom(node: LocalNode): Promise<number | null> {
  const rows = await sql<{ port: number | null; status: string }>(
    node,
    'SELECT sender_port AS port, status FROM pg_stat_wal_receiver',
  ).catch(() => []);
  return rows[0]?.status === 'streaming' ? rows[0].port : null;
}

/**
 * Whether `upstream` streams WAL to the standby `name`, as the upstream sees it. The standby's own
 * pg_stat_wal_receiver is not enough: it says `streaming`, with the sender's port, from the moment
 * it connects, before START_REPLICATION has been accepted (or refused for a missing slot).
 */
async function streamsTo(upstream: LocalNode, name: string): Promise<boolean> {
  const rows = await sql<{ state: string }>(
    upstream,
    'SELECT state FROM pg_stat_replication WHERE application_name = $1',
    [name],
  ).catch(() => []);
  return rows.some((row) => row.state === 'streaming');
}

const slotNames = async (node: LocalNode) =>
  (await sql<{ slot_name: string }>(node, 'SELECT slot_name FROM pg_replication_slots ORDER BY 1')).map(
    (row) => row.slot_name,
  );

beforeAll(async () => {
  baseDir = tmpDir('stator-cascade-');
  // node3 never bootstraps or leads (nofailover), so it is the cascading replica whatever the race gives.
  cluster = await LocalCluster.start({
    nodes: 3,
    baseDir,
    ttl: 10,
    loopWait: 2,
    retryTimeout: 4,
    tags: { 3: { replicatefrom: 'node2', nofailover: true } },
  });
  let leader = await cluster.waitForLeader(60_000);
  await cluster.waitForStreaming(
    cluster.nodes.filter((node) => node !== leader).map((node) => node.name),
    60_000,
  );
  if (leader.name === 'node2') {
    // node2 must be a replica for node3 to cascade from it.
    const response = await fetch(`${leader.apiUrl.replace(/\/stator$/, '')}/switchover`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ leader: 'node2', candidate: 'node1' }),
    });
    expect(response.status).toBe(200);
    leader = await cluster.waitForLeader(30_000, ['node2']);
  }
});

afterAll(async () => {
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

it('streams node3 from node2 through a slot there; node2 and the leader keep a slot for every other member, node3 none', async () => {
  const [node1, node2, node3] = cluster.nodes;
  await waitFor(async () => (await streamingFrom(node3)) === node2.pgPort && (await streamsTo(node2, 'node3')), {
    timeoutMs: 30_000,
    description: 'node3 streaming from node2',
  });
  await waitFor(async () => JSON.stringify(await slotNames(node2)) === JSON.stringify(['node1', 'node3']), {
    timeoutMs: 10_000,
    description: 'node2 keeping the slots of node1 and node3',
  });
  await waitFor(async () => JSON.stringify(await slotNames(node1)) === JSON.stringify(['node2', 'node3']), {
    timeoutMs: 10_000,
    description: 'the leader keeping the slots of node2 and node3',
  });
  expect(await slotNames(node3)).toEqual([]);

  await sql(node1, 'CREATE TABLE IF NOT EXISTS cascade_check (id int)');
  await sql(node1, 'INSERT INTO cascade_check VALUES (1)');
  await waitFor(
    async () =>
      (await sql<{ n: string }>(node3, 'SELECT count(*) AS n FROM cascade_check').catch(() => []))[0]?.n === '1',
    {
      timeoutMs: 10_000,
      description: 'the row written on the leader reaching node3 through node2',
    },
  );
});

it('re-points node3 to the leader when node2 stops, through the slot the leader kept for it', async () => {
  const [node1, node2, node3] = cluster.nodes;
  await node2.stop();
  await waitFor(async () => (await streamingFrom(node3)) === node1.pgPort && (await streamsTo(node1, 'node3')), {
    timeoutMs: 60_000,
    description: 'node3 streaming from the leader',
  });
  expect(await slotNames(node1)).toContain('node3');
  await sql(node1, 'INSERT INTO cascade_check VALUES (2)');
  await waitFor(
    async () =>
      (await sql<{ n: string }>(node3, 'SELECT count(*) AS n FROM cascade_check').catch(() => []))[0]?.n === '2',
    {
      timeoutMs: 10_000,
      description: 'a new row reaching node3 straight from the leader',
    },
  );
});
