import { stringify } from 'yaml';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger } from '../../src/common/logger';
import { loadConfig } from '../../src/config/load-config';
import { DEFAULT_WATCHDOG, WatchdogSettings, watchdogTimeoutSeconds } from '../../src/config/watchdog-config';
import { readingFromStatus } from '../../src/ha/peer-probe';
import { WatchdogGuard } from '../../src/ha/watchdog-guard';
import { writableDevice } from '../../src/postgresql/fence/watchdog-device';
import { removeDir, tmpDir } from '../helpers/tmp';
import { problemsIfAny } from '../helpers/config-problems';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

function writeConfig(watchdogYaml: string): string {
  const dir = tmpDir('stator-watchdog-config-');
  dirs.push(dir);
  const path = join(dir, 'stator.yml');
  const base = {
    scope: 'demo',
    name: 'node1',
    restapi: { listen: '127.0.0.1:8008' },
    etcd3: { hosts: ['127.0.0.1:2379'] },
    postgresql: { data_dir: '/tmp/data', listen: '127.0.0.1:5432' },
  };
  writeFileSync(path, `${stringify(base)}${watchdogYaml}`);
  return path;
}

function load(watchdogYaml: string) {
  return loadConfig(writeConfig(watchdogYaml), {});
}

const problems = (watchdogYaml: string) => problemsIfAny(() => load(watchdogYaml));

describe('the watchdog section', () => {
  it("defaults to Patroni's: automatic, /dev/watchdog, a 5 s safety margin, the Linux driver; no warning", () => {
    const { config, warnings } = load('');
    expect(config.watchdog).toEqual({
      mode: 'automatic',
      device: '/dev/watchdog',
      safety_margin: 5,
      driver: 'default',
    });
    expect(warnings).toEqual([]);
  });

  it.each<[string, WatchdogSettings['mode']]>([
    ['watchdog:\n  mode: required\n', 'required'],
    ['watchdog:\n  mode: require\n', 'required'],
    ['watchdog:\n  mode: Automatic\n', 'automatic'],
    ['watchdog:\n  mode: auto\n', 'automatic'],
    // YAML 1.1, as PyYAML: off is the boolean false
    ['watchdog:\n  mode: off\n', 'off'],
    ["watchdog:\n  mode: 'off'\n", 'off'],
    ['watchdog:\n  mode: disabled\n', 'off'],
    ['watchdog: off\n', 'off'],
  ])('reads %j as mode %s, with the spellings Patroni accepts', (yaml, mode) => {
    expect(load(yaml).config.watchdog.mode).toBe(mode);
  });

  it('reads the device, the safety margin and the testing driver', () => {
    expect(
      load('watchdog:\n  mode: required\n  device: /run/watchdog.fifo\n  safety_margin: -1\n  driver: testing\n').config
        .watchdog,
    ).toEqual({
      mode: 'required',
      device: '/run/watchdog.fifo',
      safety_margin: -1,
      driver: 'testing',
    });
  });

  it.each<[string, string]>([
    // Patroni turns an unknown mode off with a warning: a typo of `required` would drop the guarantee unnoticed.
    ['watchdog:\n  mode: requried\n', 'watchdog.mode: must be off, automatic or required, got "requried"'],
    ['watchdog:\n  mode: on\n', 'watchdog.mode: must be off, automatic or required, got true'],
    [
      'watchdog:\n  device: watchdog0\n',
      'watchdog.device: must be an absolute path (at most 4096 characters), got "watchdog0"',
    ],
    [
      'watchdog:\n  safety_margin: -2\n',
      'watchdog.safety_margin: must be a whole number of seconds from 0 to 65534, or -1 for ttl / 2, got -2',
    ],
    [
      'watchdog:\n  safety_margin: 2.5\n',
      'watchdog.safety_margin: must be a whole number of seconds from 0 to 65534, or -1 for ttl / 2, got 2.5',
    ],
    [
      'watchdog:\n  driver: softdog\n',
      'watchdog.driver: must be default (Linux /dev/watchdog) or testing (a FIFO, for acceptance tests), got "softdog"',
    ],
    ['watchdog: required\n', 'watchdog: must be a mapping, got "required"'],
  ])('refuses %j at start, naming the key and the rule', (yaml, problem) => {
    expect(problems(yaml)).toEqual([problem]);
  });

  it('warns about keys it does not know', () => {
    expect(load('watchdog:\n  mode: automatic\n  interval: 3\n').warnings).toEqual([
      'unsupported key watchdog.interval ignored',
    ]);
  });

  it('sets the device to ttl - safety_margin, or ttl / 2 with -1, as the reference', () => {
    expect(watchdogTimeoutSeconds(DEFAULT_WATCHDOG, 30)).toBe(25);
    expect(watchdogTimeoutSeconds({ ...DEFAULT_WATCHDOG, safety_margin: 5 }, 21)).toBe(16);
    expect(watchdogTimeoutSeconds({ ...DEFAULT_WATCHDOG, safety_margin: -1 }, 21)).toBe(10);
  });
});

describe('the watchdog as the HA loop applies it', () => {
  const fence = { connected: true, deadline: null };
  function guard(settings: Partial<WatchdogSettings>, deviceProblem: string | null = null) {
    const lines: string[] = [];
    const logger = createLogger('DEBUG', (line) => lines.push(line.trim()));
    return {
      guard: new WatchdogGuard(
        () => ({ ...DEFAULT_WATCHDOG, ...settings }),
        logger,
        undefined,
        () => deviceProblem,
      ),
      lines,
    };
  }

  it('asks the fence for the device with ttl - safety_margin, and for nothing when off, not wanted (paused) or unsafe', () => {
    const { guard: automatic } = guard({});
    expect(automatic.request(30, 10, true)).toEqual({
      driver: 'default',
      device: '/dev/watchdog',
      timeout: 25,
      required: false,
    });
    expect(automatic.request(30, 10, false)).toBeUndefined();
    // ttl 12 - 5 = 7 s would fire between two keepalives 10 s apart
    expect(automatic.request(12, 10, true)).toBeUndefined();
    expect(guard({ mode: 'off' }).guard.request(30, 10, true)).toBeUndefined();
    expect(guard({ mode: 'required', driver: 'testing', device: '/tmp/w.fifo' }).guard.request(21, 10, true)).toEqual({
      driver: 'testing',
      device: '/tmp/w.fifo',
      timeout: 16,
      required: true,
    });
  });

  it('in mode required, fails a node whose device cannot be opened, says so once, and recovers when it can', () => {
    let problem: string | null = '/dev/watchdog: ENOENT';
    const lines: string[] = [];
    const facts: string[] = [];
    const required = new WatchdogGuard(
      () => ({ ...DEFAULT_WATCHDOG, mode: 'required' }),
      createLogger('DEBUG', (line) => lines.push(line.trim())),
      (type, cause) => facts.push(`${type}: ${cause}`),
      () => problem,
    );
    expect(required.failure(30, 10, fence)).toBe('cannot open /dev/watchdog: ENOENT');
    expect(required.failure(30, 10, fence)).toBe('cannot open /dev/watchdog: ENOENT');
    expect(
      lines.filter((line) =>
        line.includes('WARNING: Watchdog device is not usable: cannot open /dev/watchdog: ENOENT'),
      ),
    ).toHaveLength(1);
    problem = null;
    expect(required.failure(30, 10, fence)).toBeNull();
    expect(lines[lines.length - 1]).toMatch(/INFO: watchdog device \/dev\/watchdog is usable again$/);
    expect(facts).toEqual([
      'watchdog.unusable: cannot open /dev/watchdog: ENOENT',
      'watchdog.usable: watchdog device /dev/watchdog is usable again',
    ]);
  });

  it('in mode required, fails a node with unsafe timings or whose fence could not activate the device', () => {
    const { guard: required } = guard({ mode: 'required' });
    expect(required.failure(12, 10, fence)).toBe(
      'Watchdog not supported because leader TTL 12 is less than 2x loop_wait 10',
    );
    const failed = {
      ...fence,
      watchdog: {
        running: false,
        timeout: null,
        device: '/dev/watchdog',
        error: 'WDIOC_SETTIMEOUT on /dev/watchdog failed: Invalid argument',
      },
    };
    expect(required.failure(30, 10, failed)).toBe('WDIOC_SETTIMEOUT on /dev/watchdog failed: Invalid argument');
  });

  it("records what the fence did with the device, once per change, on the node's watchdog stream", () => {
    const facts: string[] = [];
    const automatic = new WatchdogGuard(
      () => DEFAULT_WATCHDOG,
      createLogger('DEBUG', () => undefined),
      (type, cause) => facts.push(`${type}: ${cause}`),
      () => null,
    );
    const held = (running: boolean, timeout: number | null, error: string | null = null) => ({
      ...fence,
      watchdog: { running, timeout, device: '/dev/watchdog', error },
    });
    for (const state of [
      fence,
      held(true, 25),
      held(true, 25),
      held(true, 20),
      held(false, null),
      held(false, null, 'WDIOC_SETTIMEOUT failed'),
      held(false, null, 'WDIOC_SETTIMEOUT failed'),
    ]) {
      automatic.failure(30, 10, state);
    }
    expect(facts).toEqual([
      'watchdog.activated: watchdog set to 25 s',
      'watchdog.timeout_changed: watchdog set to 20 s',
      'watchdog.closed: magic close: this node no longer leads',
      'watchdog.activation_failed: WDIOC_SETTIMEOUT failed',
    ]);
  });

  it('records a device the fence left armed when the term ended on its deadline, and the reason of a magic close', () => {
    const facts: string[] = [];
    const automatic = new WatchdogGuard(
      () => DEFAULT_WATCHDOG,
      createLogger('DEBUG', () => undefined),
      (type, cause) => facts.push(`${type}: ${cause}`),
      () => null,
    );
    const held = (running: boolean, timeout: number | null, reason?: string) => ({
      ...fence,
      watchdog: { running, timeout, device: '/dev/watchdog', error: null, reason },
    });
    const leftArmed = "left armed: the term ended on the fence's deadline";
    for (const state of [
      held(true, 15),
      held(true, 15, leftArmed),
      held(true, 15, leftArmed),
      held(false, null, 'closed with the magic close: disarmed'),
    ]) {
      automatic.failure(30, 10, state);
    }
    expect(facts).toEqual([
      'watchdog.activated: watchdog set to 15 s',
      "watchdog.left_armed: left armed: the term ended on the fence's deadline: it fires 15 s after its last keepalive",
      'watchdog.closed: closed with the magic close: disarmed',
    ]);
  });

  it('in mode required, lets a promotion go on only once the fence reports the device activated', async () => {
    const { guard: required } = guard({ mode: 'required' });
    const states = [
      fence,
      fence,
      { ...fence, watchdog: { running: true, timeout: 25, device: '/dev/watchdog', error: null } },
    ];
    let waited = 0;
    await required.awaitActivation(
      () => states[Math.min(waited / 20, 2)],
      async (ms) => void (waited += ms),
      2000,
    );
    expect(waited).toBe(40);
    const failed = {
      ...fence,
      watchdog: {
        running: false,
        timeout: null,
        device: '/dev/watchdog',
        error: "can't open watchdog device /dev/watchdog: Permission denied",
      },
    };
    await expect(
      required.awaitActivation(
        () => failed,
        async () => undefined,
        2000,
      ),
    ).rejects.toThrow(
      "not promoting: watchdog could not be activated: can't open watchdog device /dev/watchdog: Permission denied",
    );
    await expect(
      required.awaitActivation(
        () => fence,
        async () => undefined,
        100,
      ),
    ).rejects.toThrow('not promoting: the fence did not report watchdog /dev/watchdog activated within 100 ms');
    await expect(
      guard({}).guard.awaitActivation(
        () => fence,
        async () => undefined,
        100,
      ),
    ).resolves.toBeUndefined();
  });

  it('never fails a node in mode automatic: it leads without the watchdog, with the warning the fence logs', () => {
    expect(guard({}, '/dev/watchdog: ENOENT').guard.failure(30, 10, fence)).toBeNull();
  });

  it('checks the device with access(2), as the reference, without opening it', () => {
    const dir = tmpDir('stator-watchdog-device-');
    dirs.push(dir);
    const file = join(dir, 'watchdog');
    writeFileSync(file, '');
    expect(writableDevice(file)).toBeNull();
    expect(writableDevice(join(dir, 'none'))).toBe(`${join(dir, 'none')}: ENOENT`);
  });

  it("reads a peer's watchdog_failed from its status document", () => {
    expect(
      readingFromStatus('n2', { role: 'replica', xlog: { received_location: 5 }, watchdog_failed: true })
        .watchdogFailed,
    ).toBe(true);
    expect(readingFromStatus('n2', { role: 'replica', xlog: { received_location: 5 } }).watchdogFailed).toBeUndefined();
  });
});
