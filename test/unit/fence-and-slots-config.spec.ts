import { stringify } from 'yaml';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load-config';
import { toSeconds } from '../../src/config/config-values';
import { effectiveDynamicConfig, validateDynamicConfigKeys } from '../../src/config/dynamic-config';
import { removeDir, tmpDir } from '../helpers/tmp';
import { problemsIfAny } from '../helpers/config-problems';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

/** A minimal valid file plus `extra`. */
function load(extra: Record<string, unknown>, env: NodeJS.ProcessEnv = {}) {
  const dir = tmpDir('stator-fence-config-');
  dirs.push(dir);
  const path = join(dir, 'stator.yml');
  const base = {
    scope: 'demo',
    name: 'node1',
    restapi: { listen: '127.0.0.1:8008' },
    etcd3: { hosts: ['127.0.0.1:2379'] },
    postgresql: { data_dir: '/tmp/data', listen: '127.0.0.1:5432' },
  };
  writeFileSync(path, stringify({ ...base, ...extra }));
  return loadConfig(path, env);
}

const problems = (extra: Record<string, unknown>) => problemsIfAny(() => load(extra));

describe('the fence section', () => {
  it('defaults to a 3 s agent grace with the lease released by the fence', () => {
    expect(load({}).config.fence).toEqual({ agent_grace: 3, release_lease: true });
  });

  it('reads agent_grace and release_lease, also from STATOR_FENCE_* variables', () => {
    expect(load({ fence: { agent_grace: 0.5, release_lease: 'off' } }).config.fence).toEqual({
      agent_grace: 0.5,
      release_lease: false,
    });
    expect(load({}, { STATOR_FENCE_AGENT_GRACE: '7', STATOR_FENCE_RELEASE_LEASE: 'false' }).config.fence).toEqual({
      agent_grace: 7,
      release_lease: false,
    });
  });

  it.each<[unknown, string]>([
    [-1, 'fence.agent_grace: must be a number of seconds from 0 to 600, got -1'],
    ['soon', 'fence.agent_grace: must be a number of seconds from 0 to 600, got "soon"'],
    [1e9, 'fence.agent_grace: must be a number of seconds from 0 to 600, got 1000000000'],
  ])('refuses agent_grace %j, naming the key and the rule', (value, problem) => {
    expect(problems({ fence: { agent_grace: value } })).toEqual([problem]);
  });

  it('reads the interpreter that runs the fence, also from STATOR_FENCE_PYTHON, and refuses one that is not a path', () => {
    expect(load({ fence: { python: '/opt/python3.12/bin/python3' } }).config.fence.python).toBe(
      '/opt/python3.12/bin/python3',
    );
    expect(load({}, { STATOR_FENCE_PYTHON: '/usr/local/bin/python3' }).config.fence.python).toBe(
      '/usr/local/bin/python3',
    );
    expect(problems({ fence: { python: 42 } })).toEqual([
      'fence.python: must be the path of a Python 3 interpreter (at most 4096 characters), got 42',
    ]);
    expect(problems({ fence: { python: ' ' } })).toEqual([
      'fence.python: must be the path of a Python 3 interpreter (at most 4096 characters), got " "',
    ]);
  });

  it('refuses a release_lease that is not a boolean', () => {
    expect(problems({ fence: { release_lease: 'maybe' } })).toEqual([
      'fence.release_lease: must be true or false, got "maybe"',
    ]);
  });
});

describe('member_slots_ttl', () => {
  it.each<[unknown, number | undefined]>([
    [1800, 1800],
    ['30min', 1800],
    ['1h', 3600],
    ['2d', 172_800],
    ['90s', 90],
    ['1500ms', 1],
    ['0', 0],
    ['30 minutes', undefined],
    ['1e3', undefined],
    [1.5, undefined],
  ])('reads %j as %j seconds, as the reference does', (value, seconds) => {
    expect(toSeconds(value)).toBe(seconds);
  });

  it('defaults to 30 minutes and takes the DCS value', () => {
    expect(effectiveDynamicConfig(null, {}).config.member_slots_ttl).toBe(1800);
    expect(effectiveDynamicConfig({ member_slots_ttl: '10min' }, {}).config.member_slots_ttl).toBe(600);
    expect(effectiveDynamicConfig({ member_slots_ttl: 0 }, {}).config.member_slots_ttl).toBe(0);
  });

  it('falls back to the default on a value it cannot read, and says so', () => {
    const { config, adjustments } = effectiveDynamicConfig({ member_slots_ttl: 'forever' }, {});
    expect(config.member_slots_ttl).toBe(1800);
    expect(adjustments).toEqual([
      expect.stringContaining('member_slots_ttl "forever" in the DCS configuration is not seconds from 0 to 2592000'),
    ]);
  });

  it('is refused in a /config write when it is not a duration, naming the key', () => {
    expect(validateDynamicConfigKeys({ member_slots_ttl: '30min' })).toEqual([]);
    expect(validateDynamicConfigKeys({ member_slots_ttl: -5 })).toEqual([
      'member_slots_ttl: must be seconds from 0 to 2592000, as an integer or with a unit (ms, s, min, h, d), got -5',
    ]);
  });
});
