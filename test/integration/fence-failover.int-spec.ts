import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalCluster, LocalNode, isAlive } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { killAgentAndPostmaster } from '../helpers/kill-leader';
import { DEFAULT_AGENT_GRACE_SECONDS } from '../../src/config/fence-config';
import { RecordedEvent } from '../../src/events/event';
import { fenceSafetyMarginMs } from '../../src/ha/leader-lock';
import { isPrimaryServer, sql } from '../helpers/sql';

/**
 * Fence-assisted failover on a real 3-node cluster: the fence beside the leader's postmaster ends the
 * term itself when the agent is gone (after a grace) or frozen (at its deadline), stopping PostgreSQL
 * first and revoking the lease only once the postmaster is gone, so a replica takes over in seconds
 * instead of waiting for the lease to expire. A writer and a primary watcher run through every fault:
 * no moment may have two writable primaries.
 */
const TTL = 10;
const LOOP_WAIT = 2;
/** The default `fence.agent_grace`: a supervisor's restart reconnects well within it (0.6-1.0 s here, under load). */
const GRACE_S = DEFAULT_AGENT_GRACE_SECONDS;

jest.setTimeout(240_000);

let cluster: LocalCluster;
let baseDir: string;
const timings: Record<string, number> = {};

async function canWrite(node: LocalNode, value: string): Promise<boolean> {
  try {
    await sql(node, 'INSERT INTO fence_probe(value) VALUES ($1)', [value]);
    return true;
  } catch {
    return false;
  }
}

/**
 * From `faultAt`: the first moment another node accepts a write, and every write the old leader
 * acknowledged. The old leader's writes must all come before the new leader's first one.
 */
function watchTakeover(oldLeader: LocalNode, timeoutMs: number) {
  const others = cluster.nodes.filter((node) => node !== oldLeader);
  let lastOldWriteAt = 0;
  let firstNewWriteAt = 0;
  let newLeader: LocalNode | null = null;
  const deadline = Date.now() + timeoutMs;
  const run = (async () => {
    for (let i = 0; Date.now() < deadline && (firstNewWriteAt === 0 || Date.now() < firstNewWriteAt + 1000); i++) {
      if (await canWrite(oldLeader, `old-${i}`)) lastOldWriteAt = Date.now();
      for (const node of others) {
        if (firstNewWriteAt === 0 && (await isPrimaryServer(node)) && (await canWrite(node, `new-${i}`))) {
          firstNewWriteAt = Date.now();
          newLeader = node;
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 30));
    }
  })();
  return async () => {
    await run;
    return { lastOldWriteAt, firstNewWriteAt, newLeader: newLeader as LocalNode | null };
  };
}

async function fenceJournal(node: LocalNode): Promise<RecordedEvent[]> {
  const response = await fetch(`${node.apiUrl}/events?stream=node/${node.name}/fence&limit=50`);
  return (await response.json()) as RecordedEvent[];
}

async function fenceEvents(node: LocalNode): Promise<string[]> {
  return (await fenceJournal(node)).map((event) => event.type);
}

beforeAll(async () => {
  baseDir = tmpDir('stator-fence-');
  cluster = await LocalCluster.start({
    nodes: 3,
    baseDir,
    ttl: TTL,
    loopWait: LOOP_WAIT,
    retryTimeout: 4,
  });
  const leader = await cluster.waitForHealthy(60_000);
  await sql(leader, 'CREATE TABLE fence_probe(id serial PRIMARY KEY, value text)');
  await cluster.waitForStreaming(
    cluster.nodes.filter((node) => node !== leader).map((node) => node.name),
    30_000,
  );
});

afterAll(async () => {
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
  console.log(`measured: ${JSON.stringify(timings)}`);
});

describe('the fence ends a dead leader term', () => {
  it('after kill -9 of the leader agent and postmaster, a replica accepts writes within 3 s (ttl 10)', async () => {
    const oldLeader = await cluster.waitForLeader(10_000);
    const takeover = watchTakeover(oldLeader, 20_000);
    const killedAt = Date.now();
    await killAgentAndPostmaster(oldLeader);
    const { lastOldWriteAt, firstNewWriteAt, newLeader } = await takeover();
    expect(newLeader).not.toBeNull();
    timings.agentAndPostmasterKilledToWritesMs = firstNewWriteAt - killedAt;
    expect(firstNewWriteAt - killedAt).toBeLessThan(3000);
    expect(lastOldWriteAt).toBeLessThan(firstNewWriteAt);
    // Its member key went with the revoked lease, yet the new leader made the old leader's slot at promotion.
    await waitFor(
      async () =>
        (await sql(newLeader!, 'SELECT 1 FROM pg_replication_slots WHERE slot_name = $1', [oldLeader.name])).length ===
        1,
      {
        timeoutMs: 3000,
        description: `${newLeader!.name} holding a slot for ${oldLeader.name}`,
      },
    );

    const restartedAt = Date.now();
    oldLeader.start();
    await cluster.waitForStreaming([oldLeader.name], 60_000);
    timings.oldLeaderRestartToStreamingMs = Date.now() - restartedAt;
    // Both die at once: the fence notes the lost agent only if it sees the agent's socket close before the postmaster's exit.
    const steps = await fenceEvents(oldLeader);
    expect(steps.filter((step) => step !== 'fence.agent_lost')).toEqual([
      'fence.postgres_stopped',
      'fence.lease_revoked',
    ]);
    expect(steps.indexOf('fence.agent_lost')).toBeLessThanOrEqual(0);
    expect(readFileSync(join(oldLeader.stateDir, 'postgresql.log'), 'utf8')).not.toContain(
      `replication slot "${oldLeader.name}" does not exist`,
    );
  });

  it(`after kill -9 of the leader agent alone, PostgreSQL stops after the ${GRACE_S} s grace and a replica accepts writes within grace + 3 s`, async () => {
    const oldLeader = await cluster.waitForLeader(10_000);
    const postmaster = oldLeader.postmasterPid()!;
    const takeover = watchTakeover(oldLeader, 20_000);
    const killedAt = Date.now();
    await oldLeader.killAgent();
    const { lastOldWriteAt, firstNewWriteAt, newLeader } = await takeover();
    expect(newLeader).not.toBeNull();
    timings.agentKilledToWritesMs = firstNewWriteAt - killedAt;
    timings.agentKilledLastOldWriteMs = lastOldWriteAt - killedAt;
    expect(firstNewWriteAt - killedAt).toBeLessThan((GRACE_S + 3) * 1000);
    // The old primary served writes through the grace (a restarting agent is not a failover), then stopped, before anyone else took over.
    expect(lastOldWriteAt - killedAt).toBeGreaterThan(GRACE_S * 1000 - 500);
    expect(lastOldWriteAt).toBeLessThan(firstNewWriteAt);
    expect(isAlive(postmaster)).toBe(false);

    oldLeader.start();
    await cluster.waitForStreaming([oldLeader.name], 60_000);
    expect(await fenceEvents(oldLeader)).toEqual([
      'fence.agent_lost',
      'fence.stopping_postgres',
      'fence.postgres_stopped',
      'fence.lease_revoked',
    ]);
  });

  it('an agent restarted within the grace keeps its leader term: same postmaster, no failover', async () => {
    const leader = await cluster.waitForLeader(10_000);
    const postmaster = leader.postmasterPid()!;
    const before = await fenceEvents(leader);
    await leader.killAgent();
    leader.start();
    await waitFor(async () => (await leader.healthCode('/primary')) === 200, {
      timeoutMs: 20_000,
      description: 'the restarted agent serving /primary',
    });
    expect(leader.postmasterPid()).toBe(postmaster);
    expect(isAlive(postmaster)).toBe(true);
    expect(await cluster.primaries()).toEqual([leader.name]);
    await waitFor(async () => (await fenceEvents(leader)).length >= before.length + 2, {
      timeoutMs: 10_000,
      description: 'the fence journal recorded',
    });
    expect((await fenceEvents(leader)).slice(before.length)).toEqual(['fence.agent_lost', 'fence.agent_back']);
    expect(await canWrite(leader, 'after a quick agent restart')).toBe(true);
  });

  it('a frozen leader agent: the fence stops PostgreSQL at its deadline (ttl - margin) and revokes the lease, a replica takes over within ttl + 2 s', async () => {
    const oldLeader = await cluster.waitForLeader(10_000);
    const takeover = watchTakeover(oldLeader, 30_000);
    const frozenAt = Date.now();
    oldLeader.signal('SIGSTOP');
    const { lastOldWriteAt, firstNewWriteAt, newLeader } = await takeover();
    expect(newLeader).not.toBeNull();
    timings.frozenAgentToWritesMs = firstNewWriteAt - frozenAt;
    // What a client sees; the race and the promotion after the revocation take longer on a loaded machine.
    expect(firstNewWriteAt - frozenAt).toBeLessThan(TTL * 1000 + 2000);
    expect(lastOldWriteAt).toBeLessThan(firstNewWriteAt);

    oldLeader.signal('SIGCONT');
    await cluster.waitForStreaming([oldLeader.name], 60_000);
    const journal = await fenceJournal(oldLeader);
    expect(journal.slice(-2).map((event) => event.type)).toEqual(['fence.postgres_stopped', 'fence.lease_revoked']);
    // The fence's deadline: its last arming, before the freeze, + ttl - margin (its timer may fire a little late).
    const stoppedAt = Date.parse(journal[journal.length - 2].at);
    expect(stoppedAt - frozenAt).toBeLessThan(TTL * 1000 - fenceSafetyMarginMs(TTL) + 1000);
    expect(await cluster.primaries()).toEqual([newLeader!.name]);
  });
});
