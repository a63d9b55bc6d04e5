import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  reinitializeBody,
  restartBody,
  switchoverBody,
  parseRestart,
  parseSwitchover,
} from '../../../src/api/operation-requests';
import { BadHealthQuery, healthStatus, parseLag } from '../../../src/api/health';
import { readLagBytes, readSchedule, readTimeoutSeconds } from '../../../src/api/request-values';
import { readIsoTimestamp } from '../../../src/common/iso-timestamp';
import { reviewConfigWrite } from '../../../src/config/config-write-review';
import { effectiveDynamicConfig, validateDynamicConfigKeys } from '../../../src/config/dynamic-config';
import { configChange } from '../../../src/ha/config-change';
import { OperationRefused } from '../../../src/ha/operation-types';
import { refusal } from './refusal';
import { leaderView, NOW, replicaView } from './node-view-fixtures';

const MIB = 1024 * 1024;

/** Swallows the refusal: only the time spent deciding matters here. */
function attempt(work: () => unknown): void {
  try {
    work();
  } catch (error) {
    if (!(error instanceof OperationRefused) && !(error instanceof BadHealthQuery)) throw error;
  }
}

/**
 * Inputs built to make backtracking matchers explode: long runs of what a pattern's adjacent
 * quantifiers both accept, ended by a character that makes the match fail.
 */
const ADVERSARIAL: Record<string, (size: number) => string> = {
  'digits then a letter': (n) => `${'1'.repeat(n)}x`,
  '1, spaces, x': (n) => `1${' '.repeat(n)}x`,
  'dots and digits': (n) => `${'1.'.repeat(n / 2)}x`,
  'hex digits then g': (n) => `0x${'f'.repeat(n)}g`,
  'spaces around a unit': (n) => ` ${' '.repeat(n / 2)}1 kB${' '.repeat(n / 2)}x`,
};

const PARSERS: Record<string, (input: string) => unknown> = {
  'GET /replica?lag=': (input) => attempt(() => parseLag(input)),
  'POST /restart timeout': (input) =>
    attempt(() => parseRestart(restartBody.transform({ timeout: input }), false, NOW)),
  'POST /restart schedule': (input) =>
    attempt(() => parseRestart(restartBody.transform({ schedule: input }), false, NOW)),
  'POST /restart postgres_version': (input) => attempt(() => restartBody.transform({ postgres_version: input })),
  'POST /switchover scheduled_at': (input) =>
    attempt(() =>
      parseSwitchover('switchover', switchoverBody.transform({ leader: 'n1', scheduled_at: input }), false, NOW),
    ),
  'POST /switchover leader': (input) => attempt(() => switchoverBody.transform({ leader: input })),
  'PATCH /config key and value': (input) => [
    validateDynamicConfigKeys({ [input]: input, postgresql: { parameters: { [input]: input } } }),
    reviewConfigWrite({ [input]: input }),
  ],
};

describe('request values are read in time linear in their length', () => {
  // The bound tells linear from backtracking (minutes, or a quadratic scan's 10^12 steps), not fast from slow: the
  // process's CPU counts V8's GC and compiler threads too, and a clean-clone CI saw one 1 MiB parse take 50 ms
  // (20-40 ms for several parsers on an idle machine).
  it('answers every parser on adversarial inputs up to 1 MiB within 1 s of CPU (a backtracking matcher needs minutes)', () => {
    const rows: string[] = [];
    for (const [parser, parse] of Object.entries(PARSERS)) {
      // Once on a short input first: what a parser loads on its first use (class-validator for the
      // operation bodies) is not what is measured here.
      parse('1');
      for (const [shape, build] of Object.entries(ADVERSARIAL)) {
        const input = build(MIB);
        // CPU time, not wall time: a machine busy with other work must not fail a linear parser.
        const started = process.cpuUsage();
        parse(input);
        const used = process.cpuUsage(started);
        const ms = (used.user + used.system) / 1000;
        rows.push(`| ${parser} | ${shape} | ${ms.toFixed(3)} |`);
        expect({ parser, shape, fast: ms < 1_000 }).toEqual({ parser, shape, fast: true });
      }
    }
    mkdirSync('test-artifacts', { recursive: true });
    writeFileSync(
      join('test-artifacts', 'parser-times.md'),
      ['| parser | 1 MiB input | ms |', '|---|---|---|', ...rows, ''].join('\n'),
    );
  });

  it('still reads what the reference reads', () => {
    expect(readLagBytes('16MB')).toBe(16 * MIB);
    expect(readLagBytes(' 4097.5kB ')).toBe(4195840);
    expect(readLagBytes('0x10')).toBe(16);
    expect(readLagBytes('.5e1 B')).toBe(5);
    expect(readLagBytes(`${'1'.repeat(65)}`)).toBeNull();
    expect(readTimeoutSeconds(' 2.5 min ')).toBe(150);
    expect(readTimeoutSeconds(`1${' '.repeat(200_000)}x`)).toBeNull();
  });
});

describe('numbers are bounded to what Node, etcd and PostgreSQL honour', () => {
  it.each([1e20, 1e11, 2 ** 31])('refuses ttl %d in a /config write, naming the key and the range', (ttl) => {
    expect(validateDynamicConfigKeys({ ttl })).toEqual([
      `ttl: must be an integer from 5 to 86400, got ${JSON.stringify(ttl)}`,
    ]);
  });

  it('clamps a huge ttl written into the DCS by another tool, and says so', () => {
    const { config, adjustments } = effectiveDynamicConfig({ ttl: 1e20, loop_wait: 10, retry_timeout: 10 }, {});
    expect(config.ttl).toBe(86400);
    expect(adjustments).toContain('ttl lowered from 100000000000000000000 to 86400 (the maximum)');
  });

  it('refuses a restart timeout past a day and a schedule more than 366 days ahead', () => {
    expect(refusal(() => restartBody.transform({ timeout: 1e9 }))).toEqual({
      status: 400,
      text: 'Timeout should be a positive number of seconds',
    });
    expect(refusal(() => readSchedule('2030-01-01T00:00:00Z', 'restart', NOW))).toEqual({
      status: 422,
      text: 'Cannot schedule restart more than 366 days ahead',
    });
  });
});

describe('timestamps must exist in the calendar', () => {
  it.each([
    '2030-02-30T10:00:00Z',
    '2030-02-31T24:00:00Z',
    '2027-13-01T10:00:00Z',
    '2027-06-01T10:60:00Z',
    '2027-06-01T10:00:00+24:00',
    '2027-02-29T10:00:00Z',
  ])('refuses %s as the reference does (dateutil cannot parse it)', (text) => {
    expect(refusal(() => readSchedule(text, 'switchover', NOW))).toEqual({
      status: 422,
      text: 'Unable to parse scheduled timestamp. It should be in an unambiguous format, e.g. ISO 8601',
    });
  });

  it('accepts a leap day, fractions and every offset form', () => {
    expect(readIsoTimestamp('2028-02-29T10:00:00Z')).toEqual({
      kind: 'valid',
      at: Date.parse('2028-02-29T10:00:00Z'),
      text: '2028-02-29T10:00:00Z',
    });
    expect(readIsoTimestamp('2027-06-01 12:30:15.250+02:30')).toMatchObject({
      kind: 'valid',
      at: Date.parse('2027-06-01T10:00:15.250Z'),
    });
    expect(readIsoTimestamp('2027-06-01T12:30-0100')).toMatchObject({
      kind: 'valid',
      at: Date.parse('2027-06-01T13:30:00Z'),
    });
    expect(readIsoTimestamp('2027-06-01T12:30:00')).toEqual({ kind: 'no-offset' });
  });
});

describe('keys are looked up as own properties only', () => {
  it.each(['constructor', 'toString', 'hasOwnProperty', 'valueOf'])(
    'refuses %s as an unknown key in every body',
    (key) => {
      expect(reviewConfigWrite({ [key]: 1 }).problems).toEqual([
        expect.stringMatching(new RegExp(`^${key}: unknown key`)),
      ]);
      expect(validateDynamicConfigKeys({ [key]: 1 })).toEqual([]);
      expect(
        refusal(() =>
          parseSwitchover('switchover', switchoverBody.transform({ leader: 'n1', [key]: 'x' }), false, NOW),
        ),
      ).toEqual({
        status: 400,
        text: `Unknown field: ${key} (accepted: leader, candidate, scheduled_at, site)`,
      });
      expect(refusal(() => restartBody.transform({ [key]: 'x' }))).toEqual({
        status: 400,
        text: `Unknown filter for the scheduled restart: ${key}`,
      });
      expect(refusal(() => reinitializeBody.transform({ [key]: true }))).toEqual({
        status: 400,
        text: `Unknown field: ${key} (accepted: force, from_leader)`,
      });
    },
  );

  it('does not match tag_constructor against Object.prototype', () => {
    expect(
      healthStatus('/replica', { tag_constructor: 'function Object() { [native code] }' }, replicaView(), NOW),
    ).toBe(503);
    expect(healthStatus('/health', { tag_toString: 'x' }, leaderView(), NOW)).toBe(503);
  });
});

describe('nothing is accepted and then ignored', () => {
  it('refuses settings that promise what Stator does not do yet, unless they say off', () => {
    expect(reviewConfigWrite({ standby_cluster: { host: 'a b' } }).problems).toEqual([
      'standby_cluster.host: must be a host name or address',
    ]);
    expect(
      reviewConfigWrite({
        standby_cluster: { host: 'x', create_replica_methods: [{}] },
        slots: { s: { type: 'physical' } },
      }).problems,
    ).toHaveLength(1);
    expect(
      reviewConfigWrite({
        synchronous_mode: 'quorum',
        synchronous_mode_strict: true,
        synchronous_node_count: 2,
        maximum_lag_on_syncnode: 1000,
        failsafe_mode: 'on',
      }),
    ).toEqual({ problems: [] });
    expect(reviewConfigWrite({ synchronous_mode: false, failsafe_mode: null, slots: {}, ttl: 30 })).toEqual({
      problems: [],
    });
  });

  it('accepts every Patroni key it acts on, and refuses node-local and unknown ones', () => {
    expect(
      reviewConfigWrite({
        max_timelines_history: 5,
        postgresql: { pg_hba: ['host all all 0.0.0.0/0 md5'], remove_data_directory_on_rewind_failure: true },
      }),
    ).toEqual({ problems: [] });
    expect(reviewConfigWrite({ postgresql: { use_unix_socket: true } }).problems).toEqual([
      expect.stringMatching(
        /^postgresql.use_unix_socket: .*set postgresql.use_unix_socket in each node's configuration file$/,
      ),
    ]);
    expect(reviewConfigWrite({ tll: 30 }).problems).toEqual([expect.stringMatching(/^tll: unknown key/)]);
    expect(reviewConfigWrite({ tll: null }).problems).toEqual([]);
  });

  it('refuses server parameters that could not be written on one line of postgresql.conf', () => {
    expect(
      validateDynamicConfigKeys({ postgresql: { parameters: { work_mem: "4MB'\nshared_preload_libraries='x" } } }),
    ).toEqual([expect.stringMatching(/^postgresql.parameters.work_mem: must not contain control characters/)]);
    expect(validateDynamicConfigKeys({ postgresql: { parameters: { 'bad name': 1 } } })).toEqual([
      expect.stringMatching(/^postgresql.parameters."bad name": must be named as PostgreSQL names parameters/),
    ]);
  });
});

describe('a configuration change records what changed', () => {
  it('lists the keys set and removed, walking into objects, never the whole document', () => {
    const big = 'x'.repeat(60_000);
    const before = {
      ttl: 30,
      loop_wait: 10,
      comment: big,
      postgresql: { parameters: { work_mem: '4MB', max_connections: 100 } },
    };
    const after = { ttl: 20, loop_wait: 10, comment: big, postgresql: { parameters: { work_mem: '8MB' } } };
    expect(configChange(before, after)).toEqual({
      set: { ttl: 20, 'postgresql.parameters.work_mem': '8MB' },
      removed: ['postgresql.parameters.max_connections'],
    });
    expect(configChange(after, after)).toBeNull();
  });
});
