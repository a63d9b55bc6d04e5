import { ChildProcess, spawn } from 'node:child_process';
import { chmodSync, closeSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { FenceConnection } from '../../src/postgresql/fence/fence-client';
import {
  fencePaths,
  FenceWatchdog,
  FenceWatchdogState,
  PostmasterExitEvent,
} from '../../src/postgresql/fence/fence-protocol';
import { defaultFenceProgram, fenceCommand } from '../../src/postgresql/process/fence-program';
import { isProcessAlive } from '../../src/postgresql/process/os-process';
import { WatchdogFifo } from '../helpers/watchdog-fifo';

/**
 * The fence program holding a watchdog, driven through the agent's own client as the agent drives it. The
 * device is a FIFO this test reads: with the `testing` driver it speaks Patroni's acceptance-harness protocol
 * (`Ctimeout=`, '1', 'V'); with the Linux driver the real open() and ioctl() run against it and the ioctl
 * fails as it would on any file that is not a watchdog. The postmaster is a stand-in shell script.
 */
jest.setTimeout(60_000);

const FAKE_POSTGRES = `#!/bin/sh
trap "exit 0" TERM INT QUIT
while :; do sleep 0.02; done
`;

let root: string;
let binDir: string;
const fences: ChildProcess[] = [];
const fifos: WatchdogFifo[] = [];

beforeAll(() => {
  root = tmpDir('stator-fence-watchdog-');
  binDir = join(root, 'bin');
  mkdirSync(binDir);
  writeFileSync(join(binDir, 'postgres'), FAKE_POSTGRES);
  chmodSync(join(binDir, 'postgres'), 0o755);
});

afterEach(() => {
  for (const fence of fences.splice(0))
    if (fence.exitCode === null && fence.pid && isProcessAlive(fence.pid)) process.kill(-fence.pid, 'SIGKILL');
  for (const fifo of fifos.splice(0)) fifo.close();
});

afterAll(() => {
  if (!process.env.STATOR_KEEP_TEST_DIRS) removeDir(root);
});

let counter = 0;

interface Started {
  process: ChildProcess;
  stateDir: string;
  connection: FenceConnection;
  exit: Promise<PostmasterExitEvent>;
  states: FenceWatchdogState[];
  fifo: WatchdogFifo;
}

async function startFence(): Promise<Started> {
  const stateDir = join(root, `node${++counter}`);
  mkdirSync(join(stateDir, 'data'), { recursive: true });
  const fifo = new WatchdogFifo(join(stateDir, 'watchdog.fifo'));
  fifos.push(fifo);
  const command = fenceCommand(
    defaultFenceProgram(),
    JSON.stringify({ dataDir: join(stateDir, 'data'), binDir, stateDir }),
  );
  const log = openSync(join(stateDir, 'fence.log'), 'a');
  const child = spawn(command.file, command.args, {
    detached: true,
    stdio: ['ignore', log, log],
    env: { ...process.env, ...command.env },
  });
  closeSync(log);
  fences.push(child);
  const connection = await waitFor(() => FenceConnection.connect(fencePaths(stateDir).socket, 500), {
    description: 'the fence to say hello',
    timeoutMs: 5000,
  });
  const states: FenceWatchdogState[] = [];
  const exit = new Promise<PostmasterExitEvent>((resolve) =>
    connection.attach({ onExit: resolve, onLost: () => undefined, onWatchdog: (state) => states.push(state) }),
  );
  return { process: child, stateDir, connection, exit, states, fifo };
}

function testing(fence: Started, timeout: number): FenceWatchdog {
  return { driver: 'testing', device: fence.fifo.path, timeout, required: true };
}

function fenceLog(fence: Started): string {
  return readFileSync(join(fence.stateDir, 'fence.log'), 'utf8');
}

/** The fence logs a step after it has taken it (the device closed, the report sent): a reader of the log waits for it. */
async function fenceLogged(fence: Started, line: string | RegExp): Promise<string> {
  const logged = (log: string) => (typeof line === 'string' ? log.includes(line) : line.test(log));
  await waitFor(() => logged(fenceLog(fence)), { description: `the fence's log to say ${String(line)}` });
  return fenceLog(fence);
}

describe('the fence holding a watchdog (testing driver: a FIFO)', () => {
  it('sets ttl - safety_margin, pets it on every arm, follows a new timeout, and closes it with the magic V when an arm no longer asks for it', async () => {
    const fence = await startFence();
    const far = () => Date.now() + 60_000;
    fence.connection.send({ op: 'arm', deadline: far(), watchdog: testing(fence, 16) });
    await waitFor(() => fence.fifo.count('ping') === 1, { description: 'the first keepalive' });
    expect(fence.fifo.records.map((record) => record.kind)).toEqual(['timeout', 'ping']);
    expect(fence.fifo.lastTimeout()).toBe(16);
    expect(fence.connection.hello.watchdog).toEqual({
      running: false,
      timeout: null,
      device: null,
      error: null,
      required: false,
    });
    await waitFor(() => fence.states.length === 1, { description: "the fence's report to the agent" });
    expect(fence.states[0]).toEqual({
      running: true,
      timeout: 16,
      device: fence.fifo.path,
      error: null,
      required: true,
    });

    for (let arm = 0; arm < 3; arm++)
      fence.connection.send({ op: 'arm', deadline: far(), watchdog: testing(fence, 16) });
    await waitFor(() => fence.fifo.count('ping') === 4, { description: 'a keepalive per arm' });

    // ttl changed from 21 to 20 (Patroni's "watchdog is reconfigured after global ttl changed")
    fence.connection.send({ op: 'arm', deadline: far(), watchdog: testing(fence, 15) });
    await waitFor(() => fence.fifo.lastTimeout() === 15, { description: 'the new timeout' });

    // paused: the term goes on without a watchdog
    fence.connection.send({ op: 'arm', deadline: far() });
    await waitFor(() => fence.fifo.count('magic_close') === 1 && fence.fifo.count('closed') === 1, {
      description: 'the magic close',
    });
    await fenceLogged(
      fence,
      /Watchdog test harness at .*watchdog\.fifo closed with the magic close \(no longer asked for\)/,
    );

    // resumed: opened again; then the node stops leading (disarm)
    fence.connection.send({ op: 'arm', deadline: far(), watchdog: testing(fence, 15) });
    await waitFor(() => fence.fifo.count('ping') === 6, { description: 'the watchdog opened again' });
    fence.connection.send({ op: 'disarm' });
    await waitFor(() => fence.fifo.count('magic_close') === 2, { description: 'the magic close on disarm' });
    expect(fence.states[fence.states.length - 1]).toEqual({
      running: false,
      timeout: null,
      device: fence.fifo.path,
      error: null,
      required: true,
      reason: 'closed with the magic close: disarmed',
    });
    expect(isProcessAlive(fence.connection.hello.pid)).toBe(true);
  });

  it('leaves it armed when it stopped the postmaster itself at its deadline: no V, held open past its timeout', async () => {
    const fence = await startFence();
    fence.connection.send({ op: 'arm', deadline: Date.now() + 1500, watchdog: testing(fence, 2) });
    await waitFor(() => fence.fifo.count('ping') === 1, { description: 'the first keepalive' });
    const exit = await fence.exit;
    expect(exit).toMatchObject({ fenced: true });
    // Told to the agent before the exit, with the reason.
    expect(fence.states[fence.states.length - 1]).toMatchObject({
      running: true,
      timeout: 2,
      reason: "left armed: the term ended on the fence's deadline",
    });
    await waitFor(() => fence.fifo.count('closed') === 1, {
      description: 'the fence to close the device',
      timeoutMs: 15_000,
    });
    const lastPing = fence.fifo.records.filter((record) => record.kind === 'ping').pop()!.at;
    const closed = fence.fifo.records.find((record) => record.kind === 'closed')!.at;
    // Patroni's harness: "triggered" once 2 s pass after the last ping with the device still open.
    expect(closed - lastPing).toBeGreaterThan(2000);
    expect(fence.fifo.count('magic_close')).toBe(0);
    expect(fence.fifo.count('ping')).toBe(1);
    const log = await fenceLogged(fence, 'closed without the magic close after its timeout elapsed');
    expect(log.indexOf("left armed: the term ended on the fence's deadline")).toBeGreaterThan(
      log.indexOf('exited (code'),
    );
  });

  it('closes it when the postmaster is stopped on request (the agent shuts down)', async () => {
    const fence = await startFence();
    fence.connection.send({ op: 'arm', deadline: Date.now() + 60_000, watchdog: testing(fence, 25) });
    await waitFor(() => fence.fifo.count('ping') === 1, { description: 'the first keepalive' });
    fence.connection.send({ op: 'stop', mode: 'fast' });
    expect(await fence.exit).toMatchObject({ requested: true });
    await waitFor(() => fence.fifo.count('magic_close') === 1, { description: 'the magic close' });
  });

  it('leaves it running when the fence itself dies: no magic close, the device would fire', async () => {
    const fence = await startFence();
    fence.connection.send({ op: 'arm', deadline: Date.now() + 60_000, watchdog: testing(fence, 25) });
    await waitFor(() => fence.fifo.count('ping') === 1, { description: 'the first keepalive' });
    process.kill(-fence.process.pid!, 'SIGKILL');
    await waitFor(() => fence.fifo.count('closed') === 1, { description: 'the writer to be gone' });
    expect(fence.fifo.count('magic_close')).toBe(0);
  });
});

describe('the fence holding a watchdog (Linux driver)', () => {
  it('reports a path that is no watchdog (the ioctl fails) to the agent, and never pets it', async () => {
    const fence = await startFence();
    fence.connection.send({
      op: 'arm',
      deadline: Date.now() + 60_000,
      watchdog: { driver: 'default', device: fence.fifo.path, timeout: 25, required: true },
    });
    await waitFor(() => fence.states.length === 1, { description: "the fence's report" });
    expect(fence.states[0]).toEqual({
      running: false,
      timeout: null,
      device: fence.fifo.path,
      error: `WDIOC_GETSUPPORT on ${fence.fifo.path} failed: Inappropriate ioctl for device`,
      required: true,
    });
    await fenceLogged(fence, `error: could not activate Linux watchdog device at ${fence.fifo.path}: WDIOC_GETSUPPORT`);
    expect(fence.fifo.count('ping')).toBe(0);
    // The same request is not retried on the next arm (as the reference, until the configuration changes); another is.
    fence.connection.send({
      op: 'arm',
      deadline: Date.now() + 60_000,
      watchdog: { driver: 'default', device: fence.fifo.path, timeout: 25, required: true },
    });
    fence.connection.send({ op: 'arm', deadline: Date.now() + 60_000, watchdog: testing(fence, 25) });
    await waitFor(() => fence.fifo.count('ping') === 1, { description: 'the testing driver to take over' });
    expect(fence.states.map((state) => state.error)).toEqual([expect.stringContaining('WDIOC_GETSUPPORT'), null]);
  });

  it('reports a device that does not exist', async () => {
    const fence = await startFence();
    const missing = join(fence.stateDir, 'no-watchdog');
    fence.connection.send({
      op: 'arm',
      deadline: Date.now() + 60_000,
      watchdog: { driver: 'default', device: missing, timeout: 25, required: false },
    });
    await waitFor(() => fence.states.length === 1, { description: "the fence's report" });
    expect(fence.states[0].error).toBe(`can't open watchdog device ${missing}: No such file or directory`);
    // Mode automatic: most machines have no device, as routine as in the reference (which logs it at debug).
    await fenceLogged(fence, `info: could not activate Linux watchdog device at ${missing}`);
  });
});
