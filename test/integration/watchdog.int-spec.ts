import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { WatchdogFifo } from '../helpers/watchdog-fifo';
import { patchConfig } from '../helpers/patch-config';

/**
 * Patroni's `watchdog` section on a real 2-node cluster, both in mode `required`: node1's device is a FIFO
 * this test reads (the `testing` driver, Patroni's acceptance-harness protocol), node2's device does not
 * exist. node2 never initializes the cluster nor takes the lock, and says so; node1 leads with its watchdog
 * set to ttl - safety_margin and petted on every cycle, closed with the magic 'V' while paused and when it
 * stops, and left armed (no 'V', held open past its timeout) when its agent freezes past the fence's deadline.
 * No test opens a real /dev/watchdog.
 */
const TTL = 10;
const LOOP_WAIT = 2;
const SAFETY_MARGIN = 5;

jest.setTimeout(120_000);

let cluster: LocalCluster;
let baseDir: string;
let fifo: WatchdogFifo;
let node1: LocalNode;
let node2: LocalNode;
let missingDevice: string;

function agentLog(node: LocalNode): string {
  return existsSync(node.logPath) ? readFileSync(node.logPath, 'utf8') : '';
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function holdsOpen(pid: number, path: string): boolean {
  try {
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`) === path;
      } catch {
        return false;
      }
    });
  } catch {
    return false;
  }
}

async function watchdogEvents(node: LocalNode): Promise<string[]> {
  const response = await fetch(`${node.apiUrl}/events?stream=node/${node.name}/watchdog&limit=50`);
  return ((await response.json()) as Array<{ type: string }>).map((event) => event.type);
}

beforeAll(async () => {
  baseDir = tmpDir('stator-watchdog-');
  fifo = new WatchdogFifo(join(baseDir, 'watchdog.node1.fifo'));
  missingDevice = join(baseDir, 'no-such-watchdog');
  cluster = await LocalCluster.start({
    nodes: 2,
    baseDir,
    ttl: TTL,
    loopWait: LOOP_WAIT,
    retryTimeout: 4,
    watchdog: (index) =>
      index === 1
        ? { mode: 'required', driver: 'testing', device: fifo.path, safety_margin: SAFETY_MARGIN }
        : { mode: 'required', device: missingDevice, safety_margin: SAFETY_MARGIN },
  });
  [node1, node2] = cluster.nodes;
});

afterAll(async () => {
  await cluster?.stop();
  fifo?.close();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

describe('watchdog mode required', () => {
  it('lets only the node with a usable watchdog initialize and lead; the other says why it may not', async () => {
    expect((await cluster.waitForLeader(60_000)).name).toBe('node1');
    await cluster.waitForStreaming(['node2'], 60_000);
    const status2 = await waitFor(
      async () => ((await node2.status())?.watchdog_failed === true ? node2.status() : null),
      { description: 'watchdog_failed on node2' },
    );
    expect(status2).toMatchObject({ role: 'replica', watchdog_failed: true });
    expect((await node1.status())?.watchdog_failed).toBeUndefined();
    expect(agentLog(node2)).toContain(`WARNING: Watchdog device is not usable: cannot open ${missingDevice}: ENOENT`);
    expect(agentLog(node1)).not.toContain('Watchdog device is not usable');
    expect(await watchdogEvents(node2)).toEqual(['watchdog.unusable']);
  });

  it("sets the leader's watchdog to ttl - safety_margin and pets it on every cycle", async () => {
    expect(fifo.records[0]).toMatchObject({ kind: 'timeout', seconds: TTL - SAFETY_MARGIN });
    const since = Date.now();
    await waitFor(() => fifo.count('ping', since) >= 3, {
      timeoutMs: 5 * LOOP_WAIT * 1000,
      description: 'three keepalives',
    });
    const pings = fifo.records.filter((record) => record.kind === 'ping' && record.at >= since);
    const gaps = pings.slice(1).map((ping, i) => ping.at - pings[i].at);
    // One per HA cycle: never as long apart as the watchdog's timeout.
    expect(Math.max(...gaps)).toBeLessThan((TTL - SAFETY_MARGIN) * 1000);
    console.log(
      `measured: keepalive gaps ${JSON.stringify(gaps)} ms (loop_wait ${LOOP_WAIT} s, timeout ${TTL - SAFETY_MARGIN} s)`,
    );
    expect(fifo.count('magic_close')).toBe(0);
    expect(agentLog(node1)).toMatch(/watchdog .*watchdog\.node1\.fifo activated with 5 second timeout/);
  });

  it('follows a ttl change, closes the watchdog while paused and opens it again on resume', async () => {
    await patchConfig(node1, { ttl: 12 });
    await waitFor(() => fifo.lastTimeout() === 12 - SAFETY_MARGIN, {
      timeoutMs: 10_000,
      description: 'the timeout set to the new ttl - safety_margin',
    });
    await waitFor(() => agentLog(node1).includes('watchdog.node1.fifo updated with 7 second timeout'), {
      description: "the agent's log line",
    });

    await patchConfig(node1, { pause: true });
    await waitFor(() => fifo.count('magic_close') === 1, {
      timeoutMs: 10_000,
      description: 'the magic close while paused',
    });
    const resumedAt = Date.now();
    await patchConfig(node1, { pause: false });
    await waitFor(() => fifo.count('ping', resumedAt) >= 1, {
      timeoutMs: 10_000,
      description: 'keepalives after resume',
    });
    expect(
      fifo.records
        .filter((record) => record.at >= resumedAt)
        .map((record) => record.kind)
        .slice(0, 2),
    ).toEqual(['timeout', 'ping']);
    await waitFor(async () => (await watchdogEvents(node1)).length === 4, { description: "node1's watchdog events" });
    expect(await watchdogEvents(node1)).toEqual([
      'watchdog.activated',
      'watchdog.timeout_changed',
      'watchdog.closed',
      'watchdog.activated',
    ]);
  });

  it('closes the watchdog when the leader stops, and the node without one does not take over', async () => {
    const closesBefore = fifo.count('magic_close');
    const declined = () =>
      agentLog(node2).split('following a different leader because i am not the healthiest node').length - 1;
    const declinedBefore = declined();
    await node1.stop();
    await waitFor(() => fifo.count('magic_close') === closesBefore + 1, {
      description: 'the magic close when the leader stops',
    });
    // node1 released the lock on its way out: node2 sees no leader at once, and declines every race.
    await waitFor(() => declined() >= declinedBefore + 2, {
      timeoutMs: 20_000,
      description: 'node2 declining the leader race twice',
    });
    expect(agentLog(node2)).toContain(`INFO: Watchdog device is not usable: cannot open ${missingDevice}: ENOENT`);
    expect(await node2.status()).toMatchObject({ role: 'replica', watchdog_failed: true, cluster_unlocked: true });
    expect(await node2.healthCode('/primary')).toBe(503);
  });

  it('lets the node with a watchdog lead again after a restart: it wins the race and promotes once its fence holds the watchdog', async () => {
    const since = Date.now();
    node1.start();
    expect((await cluster.waitForLeader(60_000)).name).toBe('node1');
    await waitFor(() => fifo.count('ping', since) >= 1, { description: 'keepalives from the new term' });
    expect(
      fifo.records
        .filter((record) => record.at >= since)
        .map((record) => record.kind)
        .slice(0, 2),
    ).toEqual(['timeout', 'ping']);
    expect(fifo.lastTimeout()).toBe(12 - SAFETY_MARGIN);
  });

  it("fires when the leader's agent freezes: the fence stops PostgreSQL and leaves the device armed, no V, open past its timeout", async () => {
    const timeout = 12 - SAFETY_MARGIN;
    const postmaster = node1.postmasterPid()!;
    const fence = node1.fencePid()!;
    const stoppedAt = Date.now();
    node1.signal('SIGSTOP');
    try {
      // The fence's deadline passes: PostgreSQL stops; the device is neither pet nor closed with 'V'.
      await waitFor(() => !isRunning(postmaster), { timeoutMs: 20_000, description: 'the fence to stop PostgreSQL' });
      const lastPing = fifo.records.filter((record) => record.kind === 'ping').pop()!.at;
      // Resumed before the device fires (its timeout after the last ping): too late to cancel it.
      await waitFor(() => Date.now() > lastPing + (timeout - 2) * 1000, {
        timeoutMs: 20_000,
        description: 'shortly before the timeout',
      });
      node1.signal('SIGCONT');
      await waitFor(() => Date.now() > lastPing + timeout * 1000 + 500, {
        timeoutMs: 20_000,
        description: 'the timeout to pass',
      });
      // The old fence still holds the device open (a FIFO has other writers now: the new term's fence).
      expect(holdsOpen(fence, fifo.path)).toBe(true);
      await waitFor(() => !isRunning(fence), { timeoutMs: 20_000, description: 'the old fence to exit' });
      console.log(
        `measured: the old fence held the device ${Date.now() - lastPing} ms (± 250) after its last keepalive (timeout ${timeout} s)`,
      );
      expect(fifo.count('magic_close', stoppedAt)).toBe(0);
      await waitFor(() => agentLog(node1).includes("left armed: the term ended on the fence's deadline"), {
        description: "the agent's warning",
      });
      expect(agentLog(node1)).toMatch(
        /WARNING: watchdog .*watchdog\.node1\.fifo left armed: the term ended on the fence's deadline: it fires 7 seconds after its last keepalive/,
      );
      // The resumed agent leads again, under a new fence that opens the device anew.
      expect((await cluster.waitForLeader(60_000)).name).toBe('node1');
      await waitFor(() => fifo.count('ping', lastPing + 1) >= 1, {
        timeoutMs: 20_000,
        description: 'keepalives from the new term',
      });
      expect(fifo.count('magic_close', stoppedAt)).toBe(0);
    } finally {
      node1.signal('SIGCONT');
    }
  });
});
