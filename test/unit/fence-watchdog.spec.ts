import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { removeDir, tmpDir } from '../helpers/tmp';

/**
 * The fence's Linux watchdog driver (`fence_watchdog.py`) against a stand-in device: a regular file receives
 * what the driver writes ('1' keepalives, the magic 'V'), and a fake `fcntl.ioctl` plays the kernel's watchdog
 * API (WDIOC_GETSUPPORT, WDIOC_SETTIMEOUT, WDIOC_GETTIMEOUT) with the request numbers of <linux/watchdog.h>.
 * A real /dev/watchdog is never opened: it would reset the machine.
 */
const FENCE_DIR = join(__dirname, '../../src/postgresql/fence');

const HARNESS = `
import json, sys
sys.path.insert(0, sys.argv[1])
from fence_watchdog import *
scenario = json.loads(sys.argv[2])
device = scenario['device']
calls, logs, reports = [], [], []
state = {'timeout': scenario.get('initialTimeout', 30)}

def fake_ioctl(fd, request, argument, mutate):
    assert mutate is True
    if request == 0x80285700:
        argument.options = scenario['options']
        argument.firmware_version = 7
        for i, byte in enumerate(b'iTCO_wdt'):
            argument.identity[i] = byte
        calls.append('GETSUPPORT')
    elif request == 0xC0045706:
        if scenario.get('refuseTimeout'):
            raise OSError(22, 'Invalid argument')
        calls.append('SETTIMEOUT %d' % argument.value)
        state['timeout'] = argument.value
    elif request == 0x80045707:
        argument.value = state['timeout']
        calls.append('GETTIMEOUT')
    else:
        raise OSError(25, 'Inappropriate ioctl for device')

keeper = WatchdogKeeper(logs.append, reports.append, make=lambda driver, path: LinuxWatchdog(path, ioctl=fake_ioctl))
for step in scenario['steps']:
    if step == 'release':
        keeper.release('test')
    else:
        keeper.keep(dict(step, device=device))
print(json.dumps({'calls': calls, 'logs': logs, 'reports': reports}))
`;

const WDIOF_SETTIMEOUT = 0x80;
const WDIOF_MAGICCLOSE = 0x100;

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

function watchdogDir(): string {
  const dir = tmpDir('stator-watchdog-');
  dirs.push(dir);
  return dir;
}

interface Outcome {
  calls: string[];
  logs: string[];
  reports: Array<{ running: boolean; timeout: number | null; device: string; error: string | null }>;
  written: string;
}

function run(
  scenario: { options: number; steps: unknown[]; initialTimeout?: number; refuseTimeout?: boolean },
  devicePath?: string,
): Outcome {
  const device = devicePath ?? join(watchdogDir(), 'watchdog');
  if (!devicePath) writeFileSync(device, '');
  const result = spawnSync('python3', ['-S', '-B', '-c', HARNESS, FENCE_DIR, JSON.stringify({ ...scenario, device })], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  if (result.status !== 0) throw new Error(`python3 failed: ${result.stderr}`);
  let written = '';
  try {
    written = readFileSync(device, 'latin1');
  } catch {
    // no such device: nothing written
  }
  return { ...(JSON.parse(result.stdout) as Omit<Outcome, 'written'>), written };
}

const wanted = (timeout: number, required = true) => ({ driver: 'default', device: '', timeout, required });

describe("the fence's Linux watchdog driver", () => {
  it('sets the timeout by ioctl, pets on every arm, follows a new timeout, and ends with the magic close', () => {
    const outcome = run({
      options: WDIOF_SETTIMEOUT | WDIOF_MAGICCLOSE,
      steps: [wanted(25), wanted(25), wanted(20), 'release'],
    });
    expect(outcome.calls).toEqual(['GETSUPPORT', 'SETTIMEOUT 25', 'GETTIMEOUT', 'SETTIMEOUT 20', 'GETTIMEOUT']);
    // One keepalive at activation, one per later arm, then 'V'.
    expect(outcome.written).toBe('111V');
    expect(outcome.logs[0]).toMatch(/^iTCO_wdt \(firmware 7\) at .*watchdog activated with 25 second timeout$/);
    expect(outcome.logs).toContainEqual(expect.stringMatching(/updated with 20 second timeout$/));
    expect(outcome.logs[outcome.logs.length - 1]).toMatch(/closed with the magic close \(test\)$/);
    expect(outcome.reports.map((report) => [report.running, report.timeout])).toEqual([
      [true, 25],
      [true, 20],
      [false, null],
    ]);
  });

  it('refuses a device whose fixed timeout is longer than ttl - safety_margin, closes it, and does not retry the same request before its backoff', () => {
    const outcome = run({ options: WDIOF_MAGICCLOSE, initialTimeout: 60, steps: [wanted(25), wanted(25)] });
    expect(outcome.calls).toEqual(['GETSUPPORT', 'GETTIMEOUT']);
    expect(outcome.written).toBe('V');
    expect(outcome.logs).toEqual([
      expect.stringMatching(
        /^error: could not activate .*a safe watchdog timeout 25 could not be configured: it is 60; retrying at an arm in 1 seconds$/,
      ),
    ]);
    expect(outcome.reports).toEqual([
      expect.objectContaining({
        running: false,
        error: 'a safe watchdog timeout 25 could not be configured: it is 60',
      }),
    ]);
  });

  it('in mode automatic, keeps a device whose fixed timeout is too long, with a warning, as the reference', () => {
    const outcome = run({
      options: WDIOF_MAGICCLOSE,
      initialTimeout: 60,
      steps: [wanted(25, false), wanted(25, false)],
    });
    expect(outcome.written).toBe('11');
    expect(outcome.logs[0]).toBe(
      'warning: watchdog timeout 60 seconds does not ensure safe termination within 25 seconds',
    );
    expect(outcome.reports).toEqual([expect.objectContaining({ running: true, timeout: 60, error: null })]);
  });

  it('reports an ioctl the device refuses, as routine (info) in mode automatic', () => {
    const outcome = run({
      options: WDIOF_SETTIMEOUT | WDIOF_MAGICCLOSE,
      refuseTimeout: true,
      steps: [wanted(25, false)],
    });
    expect(outcome.logs).toEqual([
      expect.stringMatching(
        /^info: could not activate .*WDIOC_SETTIMEOUT on .* failed: Invalid argument; retrying at an arm in 1 seconds$/,
      ),
    ]);
    expect(outcome.reports[0]).toMatchObject({ running: false, error: expect.stringContaining('WDIOC_SETTIMEOUT') });
  });

  it('pets a device that cannot be stopped one last time on release, and says the system will reset', () => {
    const outcome = run({ options: WDIOF_SETTIMEOUT, steps: [wanted(25), 'release'] });
    expect(outcome.written).toBe('11V');
    expect(outcome.logs).toContainEqual(
      expect.stringMatching(/can't be disabled: it will fire after this node loses the leader key$/),
    );
    expect(outcome.logs).toContainEqual(expect.stringMatching(/can't be disabled: the system resets in 25 seconds$/));
  });

  it('reports a device that cannot be opened', () => {
    const missing = join(watchdogDir(), 'no-such-watchdog');
    const outcome = run({ options: 0, steps: [wanted(25)] }, missing);
    expect(outcome.calls).toEqual([]);
    expect(outcome.reports[0]).toMatchObject({
      running: false,
      error: `can't open watchdog device ${missing}: No such file or directory`,
    });
  });
});
