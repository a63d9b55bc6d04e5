import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EtcdEventStore } from '../../src/events/etcd-event-store';
import { RecordedEvent } from '../../src/events/event';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../helpers/wait-for';

/**
 * The wall clock of the leader's host jumps back and forward by 10 minutes (issue 34) while a
 * restart and a switchover are scheduled on it: libfaketime moves the wall clock of the agent, its
 * fence and its PostgreSQL (not their monotonic clock, as NTP stepping the clock would not). No
 * failover, no lease lost, each scheduled action runs once, when the node's wall clock reaches its
 * time and not before. Agents run from `dist/`: run `npm run build` first.
 */
jest.setTimeout(150_000);

const FAKETIME = `/usr/lib/${process.arch === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu/faketime/libfaketimeMT.so.1`;
const TEN_MINUTES_S = 600;
let cluster: LocalCluster;
let baseDir: string;

/** Each node's offset file: libfaketime reads it on every clock call (FAKETIME_NO_CACHE). */
const offsetFile = (index: number) => join(baseDir, `faketime-${index}`);

function setWallClock(node: LocalNode, offsetSeconds: number): void {
  writeFileSync(offsetFile(node.index), `${offsetSeconds >= 0 ? '+' : ''}${offsetSeconds}\n`);
}

beforeAll(async () => {
  if (!existsSync(FAKETIME))
    throw new Error(`${FAKETIME} is missing: apt-get install libfaketime (.ci/run installs it)`);
  baseDir = tmpDir('stator-clock-');
  for (const index of [1, 2]) writeFileSync(offsetFile(index), '+0\n');
  cluster = await LocalCluster.start({
    nodes: 2,
    baseDir,
    ttl: 10,
    loopWait: 2,
    retryTimeout: 4,
    agentEnvFor: (index) => ({
      LD_PRELOAD: FAKETIME,
      FAKETIME_TIMESTAMP_FILE: offsetFile(index),
      FAKETIME_NO_CACHE: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    }),
  });
  await cluster.waitForHealthy(60_000);
});

afterAll(async () => {
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

async function post(node: LocalNode, path: string, body: unknown): Promise<{ status: number; text: string }> {
  const response = await fetch(node.apiUrl + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(5000),
  });
  return { status: response.status, text: await response.text() };
}

const isoIn = (ms: number) => new Date(Date.now() + ms).toISOString();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function eventsOf(types: string[]): Promise<RecordedEvent[]> {
  const store = new EtcdEventStore({ hosts: [cluster.etcd.endpoint], scope: cluster.scope, requestTimeoutMs: 5000 });
  try {
    return (await store.read()).filter((event) => types.includes(event.type));
  } finally {
    await store.close();
  }
}

it('a scheduled restart waits out a backward jump and runs once the clock reaches its time again; a scheduled switchover runs when a forward jump makes it due; no failover', async () => {
  const leader = await cluster.waitForHealthy(30_000);
  const replica = cluster.nodes.find((node) => node !== leader)!;
  const logStart = readFileSync(leader.logPath, 'utf8').length;

  // 1. A restart of the leader 10 s from now; its clock set back 10 minutes at once.
  const postmasterBefore = leader.postmasterPid();
  expect(await post(leader, '/restart', { schedule: isoIn(10_000) })).toMatchObject({ status: 202 });
  setWallClock(leader, -TEN_MINUTES_S);
  // 15 s later the restart's time has passed for everyone but the leader, whose clock says 9 min 45 s before it.
  await sleep(15_000);
  expect(leader.postmasterPid()).toBe(postmasterBefore);
  expect(await cluster.primaries()).toEqual([leader.name]);
  // The clock set right again: the restart is 5 s overdue (stale for the reference), and runs now.
  setWallClock(leader, 0);
  const restoredAt = performance.now();
  await waitFor(() => leader.postmasterPid() !== null && leader.postmasterPid() !== postmasterBefore, {
    timeoutMs: 15_000,
    description: 'the scheduled restart',
  });
  const restartDelayMs = performance.now() - restoredAt;
  await cluster.waitForHealthy(30_000);
  expect((await cluster.waitForLeader(5_000)).name).toBe(leader.name);

  // 2. A switchover 5 minutes from now; the leader's clock set 10 minutes forward: it is due on that clock, and runs.
  expect(
    await post(leader, '/switchover', { leader: leader.name, candidate: replica.name, scheduled_at: isoIn(300_000) }),
  ).toMatchObject({ status: 202 });
  await sleep(3_000);
  expect(await cluster.primaries()).toEqual([leader.name]);
  setWallClock(leader, TEN_MINUTES_S);
  const jumpedAt = performance.now();
  const newLeader = await cluster.waitForLeader(30_000, [leader.name]);
  const switchoverDelayMs = performance.now() - jumpedAt;
  expect(newLeader.name).toBe(replica.name);
  setWallClock(leader, 0);
  await cluster.waitForStreaming([leader.name], 60_000);

  const log = readFileSync(leader.logPath, 'utf8').slice(logStart);
  expect(log).toMatch(/the wall clock jumped back by 600 s since the last cycle/);
  expect(log).toMatch(/the wall clock jumped forward by 600 s since the last cycle/);
  expect(log).not.toMatch(/Found a stale|is stale, removed|failed to update leader lock/);
  let events: RecordedEvent[] = [];
  await waitFor(
    async () => {
      events = await eventsOf([
        'restart.executed',
        'restart.expired',
        'switchover.executed',
        'switchover.expired',
        'leader.lost',
        'leader.acquired',
      ]);
      return events.some((event) => event.type === 'switchover.executed');
    },
    { timeoutMs: 10_000, description: 'the executed switchover in the event log' },
  );
  // Each action once; the only change of leader is the switchover's.
  expect(events.map((event) => `${event.type} ${event.node}`).sort()).toEqual([
    `leader.acquired ${replica.name}`,
    `restart.executed ${leader.name}`,
    `switchover.executed ${leader.name}`,
  ]);
  console.log(
    `clock jumps: restart ran ${Math.round(restartDelayMs)} ms after the clock was set right, switchover ${Math.round(switchoverDelayMs)} ms after the forward jump`,
  );
});
