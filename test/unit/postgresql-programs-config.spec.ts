import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load-config';
import { effectiveDynamicConfig, validateDynamicConfigKeys } from '../../src/config/dynamic-config';
import { reviewConfigWrite } from '../../src/config/config-write-review';
import { pgCtlTimeoutMs, programPath } from '../../src/config/postgresql-programs-config';
import { memberData, MemberFacts } from '../../src/ha/member-data';
import { newestEntries } from '../../src/ha/leader-duties';
import {
  demoteStopDeadlineMs,
  promoteTimeoutMs,
  shutdownStopDeadlineMs,
  startTimeoutMs,
} from '../../src/ha/postgres-deadlines';
import { HistoryEntry } from '../../src/dcs/dcs.port';
import { problemsIfAny } from '../helpers/config-problems';

/** postgresql.bin_name, pg_ctl_timeout, proxy_address, remove_data_directory_on_*; primary_stop_timeout, max_timelines_history. */
const BASE_ENV: NodeJS.ProcessEnv = {
  PATRONI_SCOPE: 'demo',
  PATRONI_NAME: 'n1',
  PATRONI_ETCD3_HOSTS: '127.0.0.1:2379',
  PATRONI_RESTAPI_LISTEN: '127.0.0.1:8008',
  PATRONI_POSTGRESQL_DATA_DIR: '/data/n1',
  PATRONI_POSTGRESQL_LISTEN: '127.0.0.1:5432',
};

function loadWith(env: NodeJS.ProcessEnv) {
  return loadConfig(null, { ...BASE_ENV, ...env });
}

const problemsOf = (env: NodeJS.ProcessEnv) => problemsIfAny(() => loadWith(env));

describe('postgresql.bin_name', () => {
  it('maps each program from the environment, as PATRONI_POSTGRESQL_BIN_<program>, without a warning', () => {
    const { config, warnings } = loadWith({
      PATRONI_POSTGRESQL_BIN_pg_ctl: 'pg_ctl.wrapper',
      PATRONI_POSTGRESQL_BIN_postgres: '/opt/pg/postgres15',
    });
    expect(warnings).toEqual([]);
    expect(config.postgresql.bin_name).toEqual({ pg_ctl: 'pg_ctl.wrapper', postgres: '/opt/pg/postgres15' });
    // A name is looked up in bin_dir, a path is used as it is (Patroni's os.path.join).
    expect(programPath(config.postgresql, 'pg_ctl')).toBe('/usr/lib/postgresql/15/bin/pg_ctl.wrapper');
    expect(programPath(config.postgresql, 'postgres')).toBe('/opt/pg/postgres15');
    expect(programPath(config.postgresql, 'initdb')).toBe('/usr/lib/postgresql/15/bin/initdb');
  });

  it('warns about a program Stator does not run, naming the ones it does', () => {
    const loaded = loadConfig(
      writeYaml('postgresql:\n  bin_name:\n    pg_dump: mydump\n    initdb: initdb.sh\n'),
      BASE_ENV,
    );
    expect(loaded.config.postgresql.bin_name).toEqual({ initdb: 'initdb.sh' });
    expect(loaded.warnings).toEqual([
      'unsupported key postgresql.bin_name.pg_dump ignored (the programs are pg_ctl, initdb, pg_controldata, pg_basebackup, postgres, pg_isready, pg_rewind)',
    ]);
  });
});

describe('postgresql.pg_ctl_timeout', () => {
  it('is 60 s unless set; 0 means the default, as in Patroni', () => {
    expect(pgCtlTimeoutMs(loadWith({}).config.postgresql)).toBe(60_000);
    const file = writeYaml('postgresql:\n  pg_ctl_timeout: 5\n');
    expect(pgCtlTimeoutMs(loadConfig(file, BASE_ENV).config.postgresql)).toBe(5000);
    expect(
      pgCtlTimeoutMs(loadConfig(writeYaml('postgresql:\n  pg_ctl_timeout: 0\n'), BASE_ENV).config.postgresql),
    ).toBe(60_000);
  });

  it('refuses what is not a number of seconds, naming the key', () => {
    expect(() => loadConfig(writeYaml('postgresql:\n  pg_ctl_timeout: soon\n'), BASE_ENV)).toThrow(
      'postgresql.pg_ctl_timeout: must be seconds from 1 to 86400, got "soon"',
    );
  });

  it('bounds starts, stops and promotions; a primary start may take primary_start_timeout when longer', () => {
    const dynamic = effectiveDynamicConfig(null, {}).config;
    expect(startTimeoutMs('replica', dynamic, 5000)).toBe(5000);
    expect(startTimeoutMs('primary', dynamic, 5000)).toBe(300_000);
    expect(startTimeoutMs('primary', { ...dynamic, primary_start_timeout: 0 }, 5000)).toBe(5000);
    expect(promoteTimeoutMs(10, 5000)).toBe(15_000);
  });
});

describe('postgresql.proxy_address', () => {
  it('is published as proxy_url in the member key, as Patroni does', () => {
    const { config } = loadWith({ PATRONI_POSTGRESQL_PROXY_ADDRESS: 'pgbouncer.example:6432' });
    const facts = {
      config,
      version: '0.1.0',
      pgState: 'stopped',
      role: 'replica',
      sample: null,
      tags: {},
    } as unknown as MemberFacts;
    expect(
      memberData({
        ...facts,
        checkpointAfterPromotePending: false,
        scheduledRestart: null,
        paused: false,
        shutdownCheckpoint: null,
      }),
    ).toMatchObject({
      conn_url: 'postgres://127.0.0.1:5432/postgres',
      proxy_url: 'postgres://pgbouncer.example:6432/postgres',
    });
    const withoutProxy = memberData({
      ...facts,
      config: loadWith({}).config,
      checkpointAfterPromotePending: false,
      scheduledRestart: null,
      paused: false,
      shutdownCheckpoint: null,
    });
    expect(withoutProxy).not.toHaveProperty('proxy_url');
  });

  it('refuses an address without a port', () => {
    expect(problemsOf({ PATRONI_POSTGRESQL_PROXY_ADDRESS: 'pgbouncer' })).toEqual([
      'postgresql.proxy_address: must be host:port, got "pgbouncer" (from PATRONI_POSTGRESQL_PROXY_ADDRESS)',
    ]);
  });
});

describe('postgresql.remove_data_directory_on_*', () => {
  it('reads both from the file; the dynamic ones default to true (Patroni: false)', () => {
    const file = writeYaml(
      'postgresql:\n  remove_data_directory_on_rewind_failure: off\n  remove_data_directory_on_diverged_timelines: yes\n',
    );
    expect(loadConfig(file, BASE_ENV).config.postgresql).toMatchObject({
      remove_data_directory_on_rewind_failure: false,
      remove_data_directory_on_diverged_timelines: true,
    });
    expect(effectiveDynamicConfig(null, {}).config).toMatchObject({
      remove_data_directory_on_rewind_failure: true,
      remove_data_directory_on_diverged_timelines: true,
    });
    expect(
      effectiveDynamicConfig({ postgresql: { remove_data_directory_on_rewind_failure: false } }, {}).config
        .remove_data_directory_on_rewind_failure,
    ).toBe(false);
  });

  it('through /config: acted on without a warning, and a non-boolean is refused', () => {
    expect(reviewConfigWrite({ postgresql: { remove_data_directory_on_rewind_failure: false } })).toEqual({
      problems: [],
    });
    expect(validateDynamicConfigKeys({ postgresql: { remove_data_directory_on_diverged_timelines: 'maybe' } })).toEqual(
      [
        'postgresql.remove_data_directory_on_diverged_timelines: must be a boolean (true/false, on/off, yes/no), got "maybe"',
      ],
    );
  });
});

describe('primary_stop_timeout', () => {
  const dynamic = effectiveDynamicConfig({ ttl: 30, synchronous_mode: true, master_stop_timeout: 4 }, {}).config;

  it('reads master_stop_timeout as its old name, and /config acts on both without a warning', () => {
    expect(dynamic.primary_stop_timeout).toBe(4);
    expect(reviewConfigWrite({ primary_stop_timeout: 5, master_stop_timeout: 5 })).toEqual({ problems: [] });
  });

  it('shortens a demotion stop only with synchronous replication on; 0 keeps half the ttl', () => {
    expect(demoteStopDeadlineMs(dynamic)).toBe(4000);
    expect(demoteStopDeadlineMs({ ...dynamic, synchronous_mode: 'off' })).toBe(15_000);
    expect(demoteStopDeadlineMs({ ...dynamic, primary_stop_timeout: 0 })).toBe(15_000);
    // Never past half the ttl: another node may be promoted after a ttl.
    expect(demoteStopDeadlineMs({ ...dynamic, primary_stop_timeout: 600 })).toBe(15_000);
  });

  it('bounds a primary stop when the agent shuts down; otherwise pg_ctl_timeout', () => {
    expect(shutdownStopDeadlineMs(true, dynamic, 60_000)).toBe(4000);
    expect(shutdownStopDeadlineMs(false, dynamic, 60_000)).toBe(60_000);
    expect(shutdownStopDeadlineMs(true, { ...dynamic, synchronous_mode: 'off' }, 60_000)).toBe(60_000);
  });
});

describe('max_timelines_history', () => {
  const history: HistoryEntry[] = [1, 2, 3, 4, 5].map(
    (tl) => [tl, tl * 1000, 'no recovery target specified', '', 'n1'] as HistoryEntry,
  );

  it('keeps the newest entries; 0 keeps all', () => {
    expect(newestEntries(history, 2).map((entry) => entry[0])).toEqual([4, 5]);
    expect(newestEntries(history, 0)).toHaveLength(5);
    expect(newestEntries(history, 10)).toHaveLength(5);
  });

  it('is read from /config, 0 by default', () => {
    expect(effectiveDynamicConfig(null, {}).config.max_timelines_history).toBe(0);
    expect(effectiveDynamicConfig({ max_timelines_history: 3 }, {}).config.max_timelines_history).toBe(3);
    expect(validateDynamicConfigKeys({ max_timelines_history: -1 })).toEqual([
      'max_timelines_history: must be an integer from 0 to 1000000, got -1',
    ]);
  });
});

const tempDir = mkdtempSync(join(tmpdir(), 'stator-programs-'));
afterAll(() => rmSync(tempDir, { recursive: true, force: true }));
let written = 0;
function writeYaml(text: string): string {
  const path = join(tempDir, `config-${++written}.yml`);
  writeFileSync(path, text);
  return path;
}
