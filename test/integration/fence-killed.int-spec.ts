import { LocalCluster, LocalNode, isAlive } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { RecordedEvent } from '../../src/events/event';
import { isPrimaryServer, sql } from '../helpers/sql';

/**
 * The fence killed (issue 34), on a real 3-node cluster: `kill -9` of the fence alone and of the fence and the
 * agent together, on the leader and on a replica. The postmaster survives its fence; a new fence adopts it (the
 * live agent at once, a restarted one at its start), so the node is back under a dead man's switch with the same
 * postmaster, no restart and no failover. A watcher asks every node `pg_is_in_recovery()` throughout: never two
 * primaries at once.
 */
const TTL = 10;

jest.setTimeout(120_000);

let cluster: LocalCluster;
let baseDir: string;
let mostPrimariesAtOnce = 0;
let watching = true;
let watcher: Promise<void>;

async function fenceEvents(node: LocalNode): Promise<RecordedEvent[]> {
  const response = await fetch(`${node.apiUrl}/events?stream=node/${node.name}/fence&limit=50`);
  return (await response.json()) as RecordedEvent[];
}

/** The fence indicator of the node's self-diagnosis (`GET /stator/diagnostics`). */
async function fenceDiagnosis(node: LocalNode): Promise<Record<string, unknown> | null> {
  try {
    const response = await fetch(`${node.apiUrl}/stator/diagnostics`, { signal: AbortSignal.timeout(2000) });
    const body = (await response.json()) as { details?: { fence?: Record<string, unknown> } };
    return body.details?.fence ?? null;
  } catch {
    return null;
  }
}

/**
 * Waits until `node` runs `postmaster` under a live fence other than `oldFence`, and its event log names the
 * adoption (`fence.postmaster_adopted`, with the postmaster's and the new fence's pids). Returns the new fence's pid.
 */
async function waitForAdoption(node: LocalNode, oldFence: number, postmaster: number): Promise<number> {
  let fence = 0;
  await waitFor(
    async () => {
      fence = node.fencePid() ?? 0;
      if (!fence || fence === oldFence || !isAlive(fence)) return false;
      const events = await fenceEvents(node).catch(() => []);
      return events.some(
        (event) =>
          event.type === 'fence.postmaster_adopted' && String(event.data?.detail).includes(`fence ${fence} adopted it`),
      );
    },
    {
      timeoutMs: 20_000,
      intervalMs: 100,
      description: `${node.name}'s postmaster under a new fence, its adoption in /events`,
    },
  );
  const [adopted] = (await fenceEvents(node)).filter(
    (event) => event.type === 'fence.postmaster_adopted' && String(event.data?.detail).includes(`fence ${fence} `),
  );
  expect(adopted.data?.detail).toBe(
    `postmaster ${postmaster} ran without a fence (its fence was killed or died); fence ${fence} adopted it`,
  );
  expect(node.postmasterPid()).toBe(postmaster); // never restarted
  expect(isAlive(postmaster)).toBe(true);
  return fence;
}

beforeAll(async () => {
  baseDir = tmpDir('stator-fence-killed-');
  cluster = await LocalCluster.start({ nodes: 3, baseDir, ttl: TTL, loopWait: 2, retryTimeout: 4 });
  const leader = await cluster.waitForHealthy(60_000);
  await sql(leader, 'CREATE TABLE fence_killed(id serial PRIMARY KEY, note text)');
  watcher = (async () => {
    while (watching) {
      const primaries = (await Promise.all(cluster.nodes.map(isPrimaryServer))).filter(Boolean).length;
      mostPrimariesAtOnce = Math.max(mostPrimariesAtOnce, primaries);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
});

afterAll(async () => {
  watching = false;
  await watcher;
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

describe('the fence killed', () => {
  it('alone on the leader: the same primary keeps its key and runs on under a new, armed fence at once', async () => {
    const leader = await cluster.waitForLeader(10_000);
    const [fence, postmaster] = [leader.fencePid()!, leader.postmasterPid()!];
    const killedAt = Date.now();
    await leader.killFence();
    await waitForAdoption(leader, fence, postmaster);
    expect(Date.now() - killedAt).toBeLessThan(5000);
    // The diagnosis a monitor reads: a primary under a connected fence with its deadline ahead.
    await waitFor(async () => (await fenceDiagnosis(leader))?.status === 'up', {
      timeoutMs: 10_000,
      description: `${leader.name}'s fence indicator up`,
    });
    expect(await fenceDiagnosis(leader)).toMatchObject({ status: 'up', connected: true, armed: true, required: true });
    expect(await cluster.primaries()).toEqual([leader.name]);
    await sql(leader, 'INSERT INTO fence_killed(note) VALUES ($1)', ['after the leader fence was killed']);
  });

  it('alone on a replica: it streams on under a new fence', async () => {
    const leader = await cluster.waitForLeader(10_000);
    const replica = cluster.nodes.find((node) => node !== leader)!;
    const [fence, postmaster] = [replica.fencePid()!, replica.postmasterPid()!];
    await replica.killFence();
    await waitForAdoption(replica, fence, postmaster);
    await cluster.waitForStreaming([replica.name], 10_000);
    expect(await fenceDiagnosis(replica)).toMatchObject({ status: 'up', connected: true, required: false });
  });

  it('with the agent on the leader, the agent back after 1 s: no failover, the restarted agent adopts its primary', async () => {
    const leader = await cluster.waitForLeader(10_000);
    const [fence, postmaster] = [leader.fencePid()!, leader.postmasterPid()!];
    const timeline = (await leader.status())?.timeline;
    await leader.killFenceAndAgent();
    await new Promise((resolve) => setTimeout(resolve, 1000)); // a supervisor's restart
    leader.start();
    await waitForAdoption(leader, fence, postmaster);
    await waitFor(async () => (await leader.healthCode('/primary')) === 200, {
      timeoutMs: 20_000,
      description: `${leader.name} serving /primary again`,
    });
    expect((await leader.status())?.timeline).toBe(timeline);
    await waitFor(async () => (await fenceDiagnosis(leader))?.status === 'up', {
      timeoutMs: 10_000,
      description: `${leader.name}'s fence indicator up`,
    });
    expect(await cluster.primaries()).toEqual([leader.name]);
    await sql(leader, 'INSERT INTO fence_killed(note) VALUES ($1)', ['after the leader fence and agent were killed']);
  });

  it('with the agent on a replica, the agent back after 1 s: it streams on under a new fence', async () => {
    const leader = await cluster.waitForLeader(10_000);
    const replica = cluster.nodes.find((node) => node !== leader)!;
    const [fence, postmaster] = [replica.fencePid()!, replica.postmasterPid()!];
    await replica.killFenceAndAgent();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    replica.start();
    await waitForAdoption(replica, fence, postmaster);
    await cluster.waitForHealthy(20_000);
    expect(await cluster.primaries()).toEqual([leader.name]);
  });

  it('never had two primaries at once', () => {
    expect(mostPrimariesAtOnce).toBe(1);
  });
});
