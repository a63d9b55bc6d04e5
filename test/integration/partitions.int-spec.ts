import { Client } from 'pg';
import { splitBrainIntervals } from '../../scripts/lib/chaos/checker';
import { Acknowledgement, ReadWriteClient } from '../../scripts/lib/chaos/writer';
import { isAlive, LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { RecordedEvent } from '../../src/events/event';
import { NetnsLab } from '../../scripts/lib/netns-lab';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../helpers/wait-for';

/**
 * Real network partitions: each node and each of 3 etcd members in a network namespace of its own,
 * on one bridge; every node also has a link of its own to this process, the way its clients reach
 * it. A node's cluster link going down cuts it off etcd and its peers, not off its clients.
 * Replication is asynchronous: what an isolated leader acknowledges after its cut never reaches
 * the others and is lost at the heal (that is what synchronous mode is for). Every other
 * acknowledged write must survive, and no two nodes may acknowledge writes at the same time.
 * Needs root (CI runs as root). Agents run from `dist/`: run `npm run build` first.
 */
jest.setTimeout(300_000);

const TTL = 10;

let lab: NetnsLab;
let cluster: LocalCluster;
let baseDir: string;
const acknowledged: Acknowledgement[] = [];
let writers: ReadWriteClient[] = [];
const started = performance.now();
let key = 0;
/** Writes a leader acknowledged but never shipped before another node took over: asynchronous replication may lose them. */
const afterTheCut = new Set<number>();

beforeAll(async () => {
  if (!NetnsLab.available()) throw new Error('the partition tests need root and `ip netns` (iproute2)');
  baseDir = tmpDir('stator-netns-');
  lab = NetnsLab.create(baseDir);
  const etcd = await lab.startEtcd();
  cluster = await LocalCluster.start({
    nodes: 3,
    baseDir,
    ttl: TTL,
    loopWait: 2,
    retryTimeout: 4,
    network: lab.network(etcd, 3),
  });
  const leader = await cluster.waitForHealthy(90_000);
  const client = new Client({ connectionString: leader.connectionString() });
  await client.connect();
  await client.query('CREATE TABLE chaos (n bigint PRIMARY KEY, node text NOT NULL)');
  await client.end();
  writers = [0, 1].map(() => new ReadWriteClient(cluster, { next: () => ++key }, acknowledged, started));
  writers.forEach((writer) => writer.start());
});

afterAll(async () => {
  await Promise.all(writers.map((writer) => writer.stop()));
  await cluster?.stop();
  lab?.destroy();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

const now = () => performance.now() - started;

async function storedOn(node: LocalNode): Promise<Set<number>> {
  const client = new Client({ connectionString: node.connectionString(), connectionTimeoutMillis: 2000 });
  await client.connect();
  try {
    return new Set(((await client.query('SELECT n FROM chaos')).rows as { n: string }[]).map((row) => Number(row.n)));
  } finally {
    await client.end();
  }
}

/** Every write acknowledged so far is on `leader`, but those an isolated leader took after its cut; never two writers at once. */
async function expectNoLostWrite(leader: LocalNode): Promise<void> {
  // The writes acknowledged before the read: those acknowledged while it runs may be after its snapshot.
  const before = [...acknowledged];
  const stored = await storedOn(leader);
  // Each lost write with when it was acknowledged (ms since the run began), to tell a replication window from a defect.
  expect(
    before
      .filter((ack) => !stored.has(ack.n) && !afterTheCut.has(ack.n))
      .map((ack) => `${ack.n}@${ack.node} at ${Math.round(ack.at)}`),
  ).toEqual([]);
  expect(splitBrainIntervals(acknowledged)).toEqual([]);
}

/** The old leader's acknowledged writes the new leader never received: the loss asynchronous replication allows. */
async function forgiveUnshipped(oldLeader: LocalNode, newLeader: LocalNode): Promise<void> {
  if (oldLeader === newLeader) return;
  const received = await storedOn(newLeader);
  const unshipped = acknowledged.filter((ack) => ack.node === oldLeader.name && !received.has(ack.n));
  unshipped.forEach((ack) => afterTheCut.add(ack.n));
  console.log(`${unshipped.length} writes acknowledged by ${oldLeader.name} never reached ${newLeader.name}`);
}

/** After `cutAt`, `oldLeader` lost the lock to `newLeader`: it must have stopped writing before `newLeader` wrote. */
async function expectHandOverWithoutTwoWriters(
  oldLeader: LocalNode,
  newLeader: LocalNode,
  cutAt: number,
  fault: string,
): Promise<void> {
  const onNewLeader = () => acknowledged.filter((ack) => ack.node === newLeader.name && ack.at > cutAt);
  await waitFor(() => onNewLeader().length > 0, { timeoutMs: 30_000, description: `writes on ${newLeader.name}` });
  const firstNew = Math.min(...onNewLeader().map((ack) => ack.at));
  const isolated = acknowledged.filter((ack) => ack.node === oldLeader.name && ack.at > cutAt);
  // Asynchronous replication: what the old leader acknowledged but had not shipped when the new one took over is lost.
  await forgiveUnshipped(oldLeader, newLeader);
  const lastOld = Math.max(cutAt, ...isolated.map((ack) => ack.at));
  console.log(
    `${fault}: ${oldLeader.name} acknowledged ${isolated.length} writes in the ${Math.round(lastOld - cutAt)} ms after the fault, ` +
      `${newLeader.name} its first ${Math.round(firstNew - cutAt)} ms after`,
  );
  expect(isolated.filter((ack) => ack.at >= firstNew)).toEqual([]);
}

/** The node's events on `stream` since `since` (epoch ms), oldest first. */
async function eventsOf(node: LocalNode, stream: string, since: number): Promise<RecordedEvent[]> {
  const query = new URLSearchParams({ stream, since: new Date(since).toISOString(), limit: '1000' });
  const response = await fetch(`${node.apiUrl}/events?${query.toString()}`, { signal: AbortSignal.timeout(5000) });
  return (await response.json()) as RecordedEvent[];
}

/** When (ms since the run began) `probe` first holds, polled every 100 ms for `timeoutMs`. */
async function firstTime(probe: () => Promise<boolean>, timeoutMs: number, description: string): Promise<number> {
  await waitFor(probe, { timeoutMs, intervalMs: 100, description });
  return now();
}

it('the leader cut off for 30 s: it stops acknowledging writes and its postmaster is gone within ttl, another node leads, and at the heal it rejoins once per try while the new leader stays primary', async () => {
  const oldLeader = await cluster.waitForHealthy(60_000);
  await waitFor(() => acknowledged.some((ack) => ack.node === oldLeader.name), {
    timeoutMs: 10_000,
    description: 'writes on the leader',
  });
  const postmaster = oldLeader.postmasterPid()!;
  const cutAt = now();
  const cutWallClock = Date.now();
  lab.partitionNode(oldLeader.index);
  let newLeader: LocalNode;
  let healAt: number;
  try {
    // By the lease's expiry the isolated primary must be stopped, even if its fast shutdown waits for WAL senders.
    const postmasterGone = await firstTime(
      async () => !isAlive(postmaster),
      TTL * 1000,
      `${oldLeader.name}'s postmaster gone within ttl`,
    );
    newLeader = await cluster.waitForLeader(60_000, [oldLeader.name]);
    await expectHandOverWithoutTwoWriters(oldLeader, newLeader, cutAt, 'leader cut off');
    console.log(`leader cut off: its postmaster was gone ${Math.round(postmasterGone - cutAt)} ms after the cut`);
    await waitFor(async () => now() - cutAt >= 30_000, { timeoutMs: 31_000, description: '30 s of partition' });
  } finally {
    lab.healNode(oldLeader.index);
    healAt = now();
  }

  // The rejoined node says it is a replica within a second of the leader seeing it stream.
  const leaderSeesItStream = firstTime(
    async () =>
      ((await newLeader.status())?.replication as { application_name: string; state: string }[] | undefined)?.some(
        (replica) => replica.application_name === oldLeader.name && replica.state === 'streaming',
      ) ?? false,
    90_000,
    `${newLeader.name} sees ${oldLeader.name} streaming`,
  );
  const itAnswersAsReplica = firstTime(
    async () => (await oldLeader.healthCode('/replica')) === 200,
    90_000,
    `${oldLeader.name} answers 200 on /replica`,
  );
  const [seen, answered] = await Promise.all([leaderSeesItStream, itAnswersAsReplica]);
  console.log(
    `leader cut off: after the heal ${newLeader!.name} saw ${oldLeader.name} streaming at ${Math.round(seen - healAt)} ms, its /replica answered 200 at ${Math.round(answered - healAt)} ms`,
  );
  expect(answered - seen).toBeLessThan(1000);

  const leader = await cluster.waitForHealthy(90_000);
  expect(leader.name).toBe(newLeader!.name);
  await expectNoLostWrite(leader);

  // No leader demoted at the heal (etcd runs with pre-vote): the new leader's role never left primary.
  const roles = await eventsOf(newLeader!, `node/${newLeader!.name}/role`, cutWallClock);
  const becamePrimary = roles.findIndex((event) => event.to === 'primary');
  expect(becamePrimary).toBeGreaterThanOrEqual(0);
  expect(roles.slice(becamePrimary + 1).map((event) => `${event.from} -> ${event.to} (${event.cause})`)).toEqual([]);

  // At most one rejoin attempt per loop_wait, and no attempt that ran nothing claims a pg_rewind. The old leader's
  // event log catches up once its watch on etcd is back (its failed appends end the watch, which resumes on a fresh connection).
  const isRejoin = (event: RecordedEvent) =>
    event.cause === 'TASK_STARTED' && (event.data?.event as { task?: string }).task === 'rejoin';
  let tasks: RecordedEvent[] = [];
  await waitFor(
    async () => (tasks = await eventsOf(oldLeader, `node/${oldLeader.name}/task`, cutWallClock)).some(isRejoin),
    { timeoutMs: 30_000, description: `${oldLeader.name}'s rejoin in its event log` },
  );
  const rejoins = tasks.filter(isRejoin);
  const starts = rejoins.map((event) => Date.parse(event.at));
  const gaps = starts.slice(1).map((at, i) => at - starts[i]);
  const steps = tasks
    .filter((event) => event.cause.startsWith('TASK_'))
    .map((event) => `${event.at.slice(11, 23)} ${JSON.stringify(event.data?.event)}`);
  console.log(
    `leader cut off: ${rejoins.length} rejoin attempts, ${gaps.length ? `gaps ${gaps.join(', ')} ms` : 'one'}\n${steps.join('\n')}`,
  );
  expect(rejoins.length).toBeGreaterThanOrEqual(1);
  expect(gaps.filter((gap) => gap < 2000 - 100)).toEqual([]);
  const rewinds = (await eventsOf(oldLeader, `node/${oldLeader.name}/postgres`, cutWallClock)).filter(
    (event) => event.cause === 'REWIND',
  );
  const nothingRun = tasks.filter(
    (event) =>
      event.cause === 'TASK_ENDED' &&
      String((event.data?.event as { error?: string }).error).includes('nothing was run'),
  );
  expect(rewinds.length + nothingRun.length).toBeLessThanOrEqual(rejoins.length);
});

it('a replica cut off changes nothing for the leader and streams again once healed', async () => {
  const leader = await cluster.waitForHealthy(60_000);
  const replica = cluster.nodes.find((node) => node !== leader)!;
  lab.partitionNode(replica.index);
  try {
    const before = acknowledged.length;
    await waitFor(() => acknowledged.length > before + 50, { timeoutMs: 30_000, description: 'writes going on' });
    await new Promise((resolve) => setTimeout(resolve, TTL * 1000)); // past a lease: nobody may have moved
    expect((await cluster.waitForLeader(10_000)).name).toBe(leader.name);
  } finally {
    lab.healNode(replica.index);
  }
  expect((await cluster.waitForHealthy(60_000)).name).toBe(leader.name);
  await expectNoLostWrite(leader);
});

it('losing one etcd member changes nothing; losing quorum stops writes, and the cluster heals after', async () => {
  const leader = await cluster.waitForHealthy(60_000);
  lab.partitionEtcd(3);
  try {
    await new Promise((resolve) => setTimeout(resolve, TTL * 1000));
    expect((await cluster.waitForLeader(10_000)).name).toBe(leader.name);

    lab.partitionEtcd(2);
    const lostQuorumAt = now();
    try {
      // Without quorum no lock can be refreshed: the leader demotes before its lease could expire.
      await waitFor(async () => (await cluster.primaries()).length === 0, {
        timeoutMs: TTL * 1000 + 5000,
        description: 'no primary without etcd quorum',
      });
      const lastWrite = Math.max(...acknowledged.map((ack) => ack.at));
      console.log(
        `etcd quorum lost at ${Math.round(lostQuorumAt)}: last acknowledged write ${Math.round(lastWrite - lostQuorumAt)} ms after`,
      );
      expect(lastWrite - lostQuorumAt).toBeLessThan(TTL * 1000);
    } finally {
      lab.healEtcd(2);
    }
  } finally {
    lab.healEtcd(3);
  }
  const healed = await cluster.waitForHealthy(90_000);
  // The leader cut off from etcd demoted with an immediate stop: if another node leads now, what it had not shipped is lost.
  await forgiveUnshipped(leader, healed);
  await expectNoLostWrite(healed);
});

it("a lossy leader link (30 % of packets dropped each way) ends with one leader, no two writers and every write kept but an isolated leader's", async () => {
  const leader = await cluster.waitForHealthy(60_000);
  const lossFrom = now();
  lab.loseOnNode(leader.index, 30);
  try {
    await new Promise((resolve) => setTimeout(resolve, 2 * TTL * 1000));
  } finally {
    lab.stopLosingOnNode(leader.index);
  }
  const after = await cluster.waitForHealthy(90_000);
  if (after.name !== leader.name) await expectHandOverWithoutTwoWriters(leader, after, lossFrom, 'lossy leader link');
  console.log(
    `lossy leader link: ${after.name === leader.name ? 'the leader kept its lock' : `${after.name} took over`}`,
  );
  await expectNoLostWrite(after);
});

it('latency on the leader link (150 ms each way) changes nothing: the leader keeps its lock and keeps acknowledging writes', async () => {
  const leader = await cluster.waitForHealthy(60_000);
  const from = now();
  await lab.delayOnNode(leader.index, 150);
  try {
    await new Promise((resolve) => setTimeout(resolve, 2 * TTL * 1000));
  } finally {
    await lab.stopDelayingOnNode(leader.index);
  }
  const during = acknowledged.filter((ack) => ack.at > from && ack.at < now());
  console.log(
    `slow leader link: ${during.length} writes acknowledged in ${Math.round(now() - from)} ms, all by ${[...new Set(during.map((ack) => ack.node))].join(', ')}`,
  );
  expect(new Set(during.map((ack) => ack.node))).toEqual(new Set([leader.name]));
  expect(during.length).toBeGreaterThan(100);
  expect((await cluster.waitForHealthy(60_000)).name).toBe(leader.name);
  await expectNoLostWrite(leader);
});

it("latency past retry_timeout on the leader link (2.5 s each way) ends with one leader, no two writers and every write kept but an isolated leader's", async () => {
  const leader = await cluster.waitForHealthy(60_000);
  const from = now();
  await lab.delayOnNode(leader.index, 2500);
  try {
    await new Promise((resolve) => setTimeout(resolve, 2 * TTL * 1000));
  } finally {
    await lab.stopDelayingOnNode(leader.index);
  }
  const after = await cluster.waitForHealthy(90_000);
  if (after.name !== leader.name) await expectHandOverWithoutTwoWriters(leader, after, from, 'very slow leader link');
  console.log(
    `very slow leader link: ${after.name === leader.name ? 'the leader kept its lock' : `${after.name} took over`}`,
  );
  await expectNoLostWrite(after);
});

it('with failsafe_mode, etcd without a leader for 8 s (past retry_timeout) while every member answers: the leader rides it through without demoting', async () => {
  const leader = await cluster.waitForHealthy(60_000);
  const patched = await fetch(`${leader.apiUrl}/config`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ failsafe_mode: true }),
  });
  expect(patched.status).toBe(200);
  const failsafeMembers = async () => {
    const response = await fetch(`${leader.apiUrl}/failsafe`, { signal: AbortSignal.timeout(2000) });
    return response.status === 200 ? Object.keys((await response.json()) as object).length : 0;
  };
  await waitFor(async () => (await failsafeMembers()) === 3, {
    timeoutMs: 20_000,
    description: '/failsafe naming the three members',
  });
  const from = now();
  const fromWallClock = Date.now();
  lab.partitionEtcd(2);
  lab.partitionEtcd(3);
  try {
    await waitFor(async () => now() - from >= 8000, { timeoutMs: 9000, description: '8 s without an etcd leader' });
    expect(await leader.healthCode('/primary')).toBe(200);
  } finally {
    lab.healEtcd(2);
    lab.healEtcd(3);
  }
  const during = acknowledged.filter((ack) => ack.at > from && ack.at < now());
  const gap = longestGap(
    during.map((ack) => ack.at),
    from,
    now(),
  );
  console.log(
    `etcd without a leader for 8 s under failsafe: ${during.length} writes acknowledged by ${leader.name}, longest gap ${Math.round(gap)} ms`,
  );
  expect(new Set(during.map((ack) => ack.node))).toEqual(new Set([leader.name]));
  expect(gap).toBeLessThan(2000);
  expect((await cluster.waitForHealthy(60_000)).name).toBe(leader.name);
  const roles = await eventsOf(leader, `node/${leader.name}/role`, fromWallClock);
  expect(roles.map((event) => `${event.from} -> ${event.to} (${event.cause})`)).toEqual([]);
  await expectNoLostWrite(leader);
});

/** The longest stretch between `from`, the times in `times` and `to`. */
function longestGap(times: number[], from: number, to: number): number {
  const points = [from, ...times.sort((a, b) => a - b), to];
  return Math.max(...points.slice(1).map((at, i) => at - points[i]));
}
