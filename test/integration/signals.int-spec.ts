import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { isAlive, LocalCluster } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { bindNotifySocket, NotifySocket } from '../helpers/notify-socket';

/**
 * The signals an operator sends routinely, on a real leader: SIGHUP reloads the configuration file
 * (as systemd's ExecReload and the reference do) and SIGUSR2 is ignored; neither ends the agent or
 * its leader's term. Started as systemd starts a `Type=notify` unit, it tells the NOTIFY_SOCKET it is ready,
 * reloading and stopping, and keeps that socket from PostgreSQL and every other child.
 */
jest.setTimeout(120_000);

let cluster: LocalCluster;
let baseDir: string;
let systemd: NotifySocket;

beforeAll(async () => {
  baseDir = tmpDir('stator-signals-');
  systemd = await bindNotifySocket(join(baseDir, 'notify'));
  cluster = await LocalCluster.start({
    nodes: 1,
    baseDir,
    ttl: 10,
    loopWait: 2,
    retryTimeout: 4,
    agentEnv: { NOTIFY_SOCKET: systemd.path },
  });
  await cluster.waitForLeader(60_000);
});

afterAll(async () => {
  await cluster?.stop();
  systemd?.close();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

/** The datagrams systemd received since `from`, once `count` have arrived. */
async function notificationsSince(from: number, count: number): Promise<string[]> {
  await waitFor(() => systemd.messages.length >= from + count, {
    timeoutMs: 10_000,
    description: `${count} notifications`,
  });
  return systemd.messages.slice(from);
}

function monotonicMicroseconds(): bigint {
  return process.hrtime.bigint() / 1000n;
}

/** RELOADING=1 with a CLOCK_MONOTONIC time between `before` and `after`, then READY=1 once the file is read. */
function expectReload(messages: string[], before: bigint, after: bigint): void {
  expect(messages).toEqual([expect.stringMatching(/^RELOADING=1\nMONOTONIC_USEC=\d+$/), 'READY=1']);
  const usec = BigInt(/MONOTONIC_USEC=(\d+)/.exec(messages[0])![1]);
  expect(usec).toBeGreaterThanOrEqual(before);
  expect(usec).toBeLessThanOrEqual(after);
}

function environmentOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
}

it('tells systemd READY=1 once up, and PostgreSQL and its fence do not inherit NOTIFY_SOCKET', async () => {
  const [leader] = cluster.nodes;
  expect(systemd.messages).toEqual(['READY=1']);
  const postmaster = leader.postmasterPid()!;
  const fence = leader.fencePid()!;
  expect(environmentOf(postmaster).filter((entry) => entry.startsWith('NOTIFY_SOCKET='))).toEqual([]);
  expect(environmentOf(fence).filter((entry) => entry.startsWith('NOTIFY_SOCKET='))).toEqual([]);
  // The agent itself was started with it: the test did pass the socket.
  expect(environmentOf(leader.pid!)).toContain(`NOTIFY_SOCKET=${systemd.path}`);
});

it('reloads the configuration file on SIGHUP and stays the leader', async () => {
  const [leader] = cluster.nodes;
  const file = parse(readFileSync(leader.configPath, 'utf8')) as Record<string, unknown>;
  writeFileSync(leader.configPath, stringify({ ...file, tags: { datacenter: 'dc-after-reload' } }));
  const pid = leader.pid!;
  const from = systemd.messages.length;
  const before = monotonicMicroseconds();
  process.kill(pid, 'SIGHUP');
  await waitFor(
    async () =>
      ((await leader.status())?.tags as Record<string, unknown> | undefined)?.datacenter === 'dc-after-reload',
    {
      timeoutMs: 10_000,
      description: 'the reloaded tag in the status document',
    },
  );
  expect(isAlive(pid)).toBe(true);
  expect(await leader.healthCode('/primary')).toBe(200);
  expectReload(await notificationsSince(from, 2), before, monotonicMicroseconds());
});

it('tells systemd RELOADING=1 then READY=1 around POST /reload too', async () => {
  const [leader] = cluster.nodes;
  const from = systemd.messages.length;
  const before = monotonicMicroseconds();
  const response = await fetch(`${leader.apiUrl}/reload`, { method: 'POST' });
  expect(response.status).toBe(202);
  expectReload(await notificationsSince(from, 2), before, monotonicMicroseconds());
});

it('ignores SIGUSR2, whose default would end the process', async () => {
  const [leader] = cluster.nodes;
  const pid = leader.pid!;
  process.kill(pid, 'SIGUSR2');
  // Watched over a whole HA cycle (loop_wait 2 s): a process that signal ends is gone within milliseconds.
  for (const until = Date.now() + 2500; Date.now() < until; await new Promise((resolve) => setTimeout(resolve, 100))) {
    expect(isAlive(pid)).toBe(true);
  }
  expect(await leader.healthCode('/primary')).toBe(200);
});

it('tells systemd STOPPING=1 when it begins to stop', async () => {
  const [leader] = cluster.nodes;
  const from = systemd.messages.length;
  await leader.stop();
  expect(await notificationsSince(from, 1)).toEqual(['STOPPING=1']);
});
