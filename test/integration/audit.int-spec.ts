import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { killLeaderAndWait } from '../helpers/kill-leader';
import { systemClock } from '../../src/common/clock';
import { EtcdEventStore } from '../../src/events/etcd-event-store';
import { EventRetention } from '../../src/events/event-retention';
import { RecordedEvent } from '../../src/events/event';
import { sql } from '../helpers/sql';
import { parse, stringify } from 'yaml';
import { replayedMachineAt } from '../../src/audit/transition-replay';
import { HaMemory, replayableMemory } from '../../src/ha/ha-memory.machine';

/**
 * `stator audit` against the log of a real 3-node cluster that went through a bootstrap, a
 * switchover, a kill -9 of the leader (agent and postmaster), the killed node's return and a
 * scheduled switchover that was cancelled; then three tampered exports of that log.
 */
jest.setTimeout(180_000);

const REPO_ROOT = join(__dirname, '..', '..');
let cluster: LocalCluster;
let baseDir: string;

/** `stator audit <args>` as a child process (the built CLI, `npm run build` first). */
function audit(...args: string[]) {
  const run = spawnSync(process.execPath, ['bin/stator.js', 'audit', ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

async function post(
  node: LocalNode,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; text: string }> {
  const response = await fetch(node.apiUrl + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: response.status, text: await response.text() };
}

/**
 * Waits until every other node runs as a replica streaming from `leader` on its timeline, which
 * is above `previousTimeline`: a replica's status still says streaming for a moment after its
 * leader changed, and killing the new leader then would leave nobody to follow.
 */
async function waitForFollowers(leader: LocalNode, previousTimeline: number): Promise<number> {
  let timeline = 0;
  await waitFor(
    async () => {
      const [leading, ...following] = await Promise.all(
        [leader, ...cluster.nodes.filter((n) => n !== leader)].map((n) => n.status()),
      );
      timeline = Number(leading?.timeline ?? 0);
      return (
        timeline > previousTimeline &&
        following.every(
          (s) =>
            s?.state === 'running' &&
            s.role === 'replica' &&
            s.replication_state === 'streaming' &&
            s.timeline === timeline,
        )
      );
    },
    {
      timeoutMs: 60_000,
      intervalMs: 200,
      description: `every replica streaming from ${leader.name} on a timeline above ${previousTimeline}`,
    },
  );
  return timeline;
}

/** What a node served of its HA cycle's memory (GET /stator/memory), and an instant by which it was so. */
interface MemorySample {
  node: string;
  at: string;
  memory: unknown;
}

/** Read twice, equal both times: the memory did not change around the instant the sample names. */
async function sampleMemory(node: LocalNode): Promise<MemorySample> {
  const read = async () =>
    (await fetch(`${node.apiUrl}/stator/memory`, { signal: AbortSignal.timeout(5000) })).json() as Promise<unknown>;
  let sample: MemorySample | null = null;
  await waitFor(
    async () => {
      const first = await read();
      const at = new Date().toISOString();
      const second = await read();
      sample = { node: node.name, at, memory: second };
      return JSON.stringify(first) === JSON.stringify(second);
    },
    { timeoutMs: 10_000, intervalMs: 100, description: `${node.name}'s memory steady for two reads` },
  );
  return sample!;
}

beforeAll(async () => {
  baseDir = tmpDir('stator-audit-');
  cluster = await LocalCluster.start({ nodes: 3, baseDir, scope: 'audited', ttl: 10, loopWait: 2, retryTimeout: 4 });
});

afterAll(async () => {
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

it('verifies the log of a cluster that went through a switchover, a kill -9 and a cancelled schedule, and finds tampering', async () => {
  const first = await cluster.waitForLeader(30_000);
  const bootstrapTimeline = await waitForFollowers(first, 0);
  const samples: MemorySample[] = [];
  for (const node of cluster.nodes) samples.push(await sampleMemory(node));

  // A reload of a changed file: new tags in force, the configuration's digest changes.
  const reloaded = cluster.nodes.find((n) => n !== first)!;
  const file = parse(readFileSync(reloaded.configPath, 'utf8')) as { tags?: Record<string, unknown> };
  writeFileSync(reloaded.configPath, stringify({ ...file, tags: { ...file.tags, rack: 'r7' } }));
  expect(await post(reloaded, 'POST', '/reload')).toMatchObject({ status: 202 });
  await waitFor(async () => ((await reloaded.status())?.tags as Record<string, unknown> | undefined)?.rack === 'r7', {
    timeoutMs: 15_000,
    intervalMs: 200,
    description: `${reloaded.name} serving the reloaded tags`,
  });
  samples.push(await sampleMemory(reloaded));

  const candidate = cluster.nodes.find((n) => n !== first)!;
  expect(await post(first, 'POST', '/switchover', { leader: first.name, candidate: candidate.name })).toMatchObject({
    status: 200,
  });
  const second = await cluster.waitForLeader(15_000);
  expect(second.name).toBe(candidate.name);
  const switchedTimeline = await waitForFollowers(second, bootstrapTimeline);
  samples.push(await sampleMemory(second), await sampleMemory(first));
  // A restartpoint on the new timeline: a replica that is not streaming reports its last
  // checkpoint's timeline, and with the old one it would take itself for stuck behind the dead
  // leader below and rewind against it instead of waiting for the failover.
  for (const replica of cluster.nodes.filter((n) => n !== second)) await sql(replica, 'CHECKPOINT');

  const { newLeader: third } = await killLeaderAndWait(cluster, second, { timeoutMs: 30_000 });
  second.start();
  await waitForFollowers(third, switchedTimeline);
  samples.push(await sampleMemory(second), await sampleMemory(third));

  const inAnHour = new Date(Date.now() + 3_600_000).toISOString().replace('Z', '+00:00');
  expect(await post(third, 'POST', '/switchover', { leader: third.name, scheduled_at: inAnHour })).toMatchObject({
    status: 202,
  });
  expect(await post(third, 'DELETE', '/switchover')).toMatchObject({ status: 200 });

  // Every recorder has flushed what the scenario recorded: the cancellation, and the killed node's new incarnation running.
  const store = new EtcdEventStore({ hosts: [cluster.etcd.endpoint], scope: cluster.scope, requestTimeoutMs: 5000 });
  let events: RecordedEvent[] = [];
  try {
    await waitFor(
      async () => {
        events = await store.read();
        const restarted = events.filter((e) => e.stream === `node/${second.name}/postgres`);
        return (
          events.some((e) => e.type === 'switchover.cancelled') &&
          cluster.nodes.every((node) => events.some((e) => e.node === node.name && e.type === 'postgres.transition')) &&
          restarted.filter((e) => e.cause === 'xstate.init').length >= 2 &&
          restarted[restarted.length - 1].to === 'running.idle'
        );
      },
      { timeoutMs: 20_000, intervalMs: 200, description: 'the events of every node stored' },
    );
  } finally {
    await store.close();
  }
  // The memory machine replayed from the log up to each sample's instant holds what the node served then.
  expect(samples.find((s) => s.node === reloaded.name && (s.memory as HaMemory).tags.rack === 'r7')).toBeDefined();
  for (const sample of samples) {
    const replayed = replayedMachineAt(events, `node/${sample.node}/memory`, sample.at);
    expect({ node: sample.node, at: sample.at, memory: replayableMemory(replayed!.context as HaMemory) }).toEqual(
      sample,
    );
  }

  // /history before the retention cut below, read now: the audit runs that follow block this process's event loop
  // for seconds, past the agent's 5 s keep-alive, and fetch would then send on a connection the agent has closed.
  const historyBefore = await (await fetch(`${third.apiUrl}/history`)).json();
  expect(historyBefore).toHaveLength(2); // the switchover's and the failover's timelines; the cut removes the facts of at least the first

  const verified = audit('verify', '--etcd', cluster.etcd.endpoint, '--scope', cluster.scope, '--api', third.apiUrl);
  expect(verified).toMatchObject({ status: 0, stderr: '' });
  const checked = Number(/^(\d+) events checked, no problems$/m.exec(verified.stdout)?.[1]);
  expect(checked).toBeGreaterThanOrEqual(events.length);
  expect(verified.stdout).toMatch(/^✔ hash chains: /m);
  expect(verified.stdout).toMatch(/^✔ machine replay: \d+ transitions of 15 node machines replayed, all legal$/m);
  expect(verified.stdout).toMatch(/^✔ \/history of /m);

  const exported = audit('export', '--etcd', cluster.etcd.endpoint, '--scope', cluster.scope);
  expect(exported.status).toBe(0);
  const lines = exported.stdout.trim().split('\n');
  const log = lines.map((line) => JSON.parse(line) as RecordedEvent);
  const lineOf = (predicate: (e: RecordedEvent) => boolean) => log.findIndex(predicate);
  const verifyCopy = (name: string, copy: string[]) => {
    const file = join(baseDir, name);
    writeFileSync(file, `${copy.join('\n')}\n`);
    return audit('verify', '--file', file);
  };

  // One event's data altered.
  const scheduled = lineOf((e) => e.type === 'switchover.scheduled');
  const altered = [...lines];
  altered[scheduled] = JSON.stringify({
    ...log[scheduled],
    data: { ...log[scheduled].data, scheduled_at: '2099-01-01T00:00:00+00:00' },
  });
  const alteredRun = verifyCopy('altered.jsonl', altered);
  expect(alteredRun.status).toBe(1);
  expect(alteredRun.stdout).toContain(
    `cluster#${log[scheduled].seq} (line ${scheduled + 1}): altered: its content does not match its hash`,
  );

  // One event removed: the second transition of the restarted node's postgres machine.
  const stream = `node/${second.name}/postgres`;
  const removed = lineOf((e) => e.stream === stream && e.seq === 2);
  const removedRun = verifyCopy(
    'removed.jsonl',
    lines.filter((_, index) => index !== removed),
  );
  const next = lineOf((e) => e.stream === stream && e.seq === 3);
  expect(removedRun.status).toBe(1);
  expect(removedRun.stdout).toContain(`${stream}#3 (line ${next}): removed: #2 is missing before it`);

  // Two events of one stream swapped.
  const [a, b] = [lineOf((e) => e.stream === stream && e.seq === 3), lineOf((e) => e.stream === stream && e.seq === 4)];
  const swapped = [...lines];
  [swapped[a], swapped[b]] = [swapped[b], swapped[a]];
  const swappedRun = verifyCopy('swapped.jsonl', swapped);
  expect(swappedRun.status).toBe(1);
  expect(swappedRun.stdout).toContain(`${stream}#3 (line ${b + 1}): reordered: comes after #4 of its stream`);

  // Retention cuts the log to 3 events per stream: the retained log still verifies, served
  // projections included, and an agent started after the cut serves the same history.
  const cutting = new EtcdEventStore({ hosts: [cluster.etcd.endpoint], scope: cluster.scope, requestTimeoutMs: 5000 });
  try {
    const outcome = await new EventRetention({
      store: cutting,
      clock: systemClock,
      policy: { maxEventsPerStream: 3 },
    }).runOnce();
    expect(Object.keys(outcome.removed).length).toBeGreaterThan(0);
  } finally {
    await cutting.close();
  }
  const afterCut = audit('verify', '--etcd', cluster.etcd.endpoint, '--scope', cluster.scope, '--api', third.apiUrl);
  expect(afterCut).toMatchObject({ status: 0, stderr: '' });
  expect(afterCut.stdout).toMatch(
    /^✔ hash chains: .*every link intact; \d+ streams start at the retention checkpoint of /m,
  );
  expect(afterCut.stdout).toMatch(/^✔ \/history of /m);

  const restarted = cluster.nodes.find((n) => n !== third)!;
  await restarted.killAgent();
  restarted.start();
  await waitFor(
    async () => {
      const response = await fetch(`${restarted.apiUrl}/history`, { signal: AbortSignal.timeout(1000) }).catch(
        () => null,
      );
      return response?.status === 200 && JSON.stringify(await response.json()) === JSON.stringify(historyBefore);
    },
    {
      timeoutMs: 30_000,
      intervalMs: 200,
      description: `${restarted.name}, started after the cut, serving the same /history`,
    },
  );

  // A running node pages its log: the newest events first, and a link to the older ones.
  const page = await fetch(`${third.apiUrl}/events?limit=5`);
  expect(((await page.json()) as RecordedEvent[]).length).toBe(5);
  expect(page.headers.get('link')).toMatch(/^<\/events\?limit=5&before=[A-Za-z0-9_-]+>; rel="next"$/);
});
