import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { StatorConfig } from '../../src/config/config.types';
import { DEFAULT_EVENT_LOG } from '../../src/config/event-log-config';
import { DynamicConfig } from '../../src/dcs/dcs.port';
import {
  effectiveConfigOfRevision,
  effectiveDynamicConfig,
  validateDynamicConfigKeys,
} from '../../src/config/dynamic-config';
import { ConfigError, loadConfig } from '../../src/config/load-config';
import { reviewConfigWrite } from '../../src/config/config-write-review';
import { problemsOf } from '../helpers/config-problems';

const FIXTURES = join(__dirname, '../fixtures/config');
const tempDir = mkdtempSync(join(tmpdir(), 'stator-config-'));
afterAll(() => rmSync(tempDir, { recursive: true, force: true }));

let filesWritten = 0;
function writeConfigFile(text: string): string {
  const path = join(tempDir, `config-${++filesWritten}.yml`);
  writeFileSync(path, text);
  return path;
}

type Doc = { [key: string]: unknown };

/** The smallest valid file; tests change it with `withBase` (an `undefined` value removes the key). */
const BASE: Doc = {
  scope: 'demo',
  name: 'n1',
  restapi: { listen: '127.0.0.1:8008' },
  etcd3: { hosts: ['127.0.0.1:2379'] },
  postgresql: { listen: '127.0.0.1:5432', data_dir: '/data/n1' },
};

function withBase(overrides: Doc, base: Doc = BASE): Doc {
  const merged: Doc = { ...base };
  for (const [key, value] of Object.entries(overrides)) {
    const current = merged[key];
    if (value === undefined) delete merged[key];
    else if (isDoc(value) && isDoc(current)) merged[key] = withBase(value, current);
    else merged[key] = value;
  }
  return merged;
}

function isDoc(value: unknown): value is Doc {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function load(overrides: Doc = {}, env: NodeJS.ProcessEnv = {}) {
  return loadConfig(writeConfigFile(stringify(withBase(overrides), { version: '1.1' })), env);
}

/** The environment that alone makes a valid configuration (`loadConfig(null, ...)`). */
const ENV_ONLY: NodeJS.ProcessEnv = {
  PATRONI_SCOPE: 'demo',
  PATRONI_NAME: 'stator1',
  PATRONI_RESTAPI_LISTEN: '0.0.0.0:8008',
  PATRONI_RESTAPI_CONNECT_ADDRESS: 'stator1:8008',
  PATRONI_ETCD3_HOSTS: 'etcd:2379',
  PATRONI_POSTGRESQL_LISTEN: '0.0.0.0:5432',
  PATRONI_POSTGRESQL_CONNECT_ADDRESS: 'stator1:5432',
  PATRONI_POSTGRESQL_DATA_DIR: '/var/lib/postgresql/stator/data',
};

describe('loadConfig', () => {
  it('reads a full Stator configuration, every key', () => {
    const { config, warnings } = loadConfig(join(FIXTURES, 'stator-full.yml'), {});

    const expected: StatorConfig = {
      scope: 'orders',
      namespace: '/db',
      name: 'orders-1',
      compat: 'patroni',
      restapi: {
        listen: '0.0.0.0:8008',
        connect_address: '10.1.0.11:8008',
        authentication: { username: 'admin', password: 'admin-secret' },
        certfile: '/etc/stator/tls/api.crt',
        keyfile: '/etc/stator/tls/api.key',
        cafile: '/etc/stator/tls/ca.crt',
        verify_client: 'optional',
        allowlist: ['10.1.0.0/24', 'monitoring.internal'],
      },
      etcd3: {
        hosts: ['10.1.0.21:2379', '10.1.0.22:2379', '10.1.0.23:2379'],
        protocol: 'https',
        username: 'stator',
        password: 'etcd-secret',
      },
      bootstrap: {
        dcs: {
          ttl: 10,
          loop_wait: 2,
          retry_timeout: 3,
          maximum_lag_on_failover: 33554432,
          check_timeline: true,
          primary_start_timeout: 60,
          synchronous_mode: false,
          postgresql: {
            use_pg_rewind: true,
            use_slots: false,
            parameters: { max_connections: 200, wal_keep_size: '1GB', hot_standby: true },
          },
        },
        method: 'restore',
        methods: { restore: { command: '/usr/local/bin/restore-latest-backup.sh', options: {} } },
        initdb: [{ encoding: 'UTF8' }, 'data-checksums', { locale: 'C.UTF-8' }],
      },
      postgresql: {
        listen: '0.0.0.0:5432',
        connect_address: '10.1.0.11:5432',
        data_dir: '/var/lib/postgresql/15/orders/',
        bin_dir: '/usr/lib/postgresql/16/bin',
        authentication: {
          superuser: { username: 'dba', password: 'super-secret' },
          replication: { username: 'repl', password: 'repl-secret' },
        },
        // YAML 1.1, as Patroni reads it: 0770 is octal and `on` is a boolean.
        parameters: { shared_buffers: '1GB', unix_socket_permissions: 0o770, log_connections: true },
        pg_hba: [
          'local all all peer',
          'host replication repl 10.1.0.0/24 scram-sha-256',
          'host all all 10.1.0.0/24 scram-sha-256',
        ],
        os_user: 'pgsql',
        callbacks: {},
      },
      tags: {
        nofailover: false,
        noloadbalance: false,
        clonefrom: true,
        nosync: false,
        failover_priority: 3,
        datacenter: 'eu-west-1a',
      },
      state_dir: '/var/lib/stator/orders-1',
      log: {
        level: 'debug',
        type: 'plain',
        format: '%(asctime)s %(levelname)s: %(message)s',
        file_num: 4,
        file_size: 25_000_000,
      },
      fence: { agent_grace: 5, release_lease: false },
      event_log: {
        max_age: 604_800,
        max_events_per_stream: 20_000,
        max_bytes: 4 * 1024 * 1024,
        etcd_quota_bytes: 8 * 1024 ** 3,
        etcd_quota_share: 0.25,
      },
      watchdog: { mode: 'required', device: '/dev/watchdog1', safety_margin: -1, driver: 'default' },
    };
    expect(config).toEqual(expected);
    expect(warnings).toEqual([]);
  });

  it('loads examples/stator.yml, which shows every key, without a warning', () => {
    const { config, warnings } = loadConfig(join(__dirname, '../../examples/stator.yml'), {});
    expect(warnings).toEqual([]);
    expect(config.restapi.verify_client).toBe('optional');
  });

  it('loads a Patroni 3.x patroni.yml for etcd3 unchanged, without a warning', () => {
    const { config, warnings } = loadConfig(join(FIXTURES, 'patroni-3-etcd3.yml'), {});

    expect(warnings).toEqual([]);
    expect(config).toMatchObject({
      ctl: { insecure: false },
      scope: 'batman',
      namespace: '/service',
      name: 'postgresql0',
      compat: 'stator',
      restapi: {
        listen: '0.0.0.0:8008',
        connect_address: '10.0.0.11:8008',
        authentication: { username: 'patroni', password: 'api-secret' },
      },
      etcd3: { hosts: ['10.0.0.21:2379', '10.0.0.22:2379', '10.0.0.23:2379'], protocol: 'http' },
      bootstrap: {
        method: 'initdb',
        methods: {},
        initdb: [{ encoding: 'UTF8' }, 'data-checksums'],
        pg_hba: ['host replication replicator 127.0.0.1/32 md5', 'host all all 0.0.0.0/0 md5'],
      },
      postgresql: {
        data_dir: '/var/lib/postgresql/15/main',
        authentication: {
          superuser: { username: 'postgres', password: 'zalando' },
          replication: { username: 'replicator', password: 'rep-pass' },
        },
        parameters: { unix_socket_directories: '/var/run/postgresql' },
        pg_hba: ['host replication replicator 0.0.0.0/0 md5', 'host all all 0.0.0.0/0 md5'],
        callbacks: { on_role_change: '/usr/local/bin/on_role_change.sh' },
      },
      tags: { nofailover: false, noloadbalance: false, clonefrom: false, nosync: false },
      state_dir: '/var/lib/postgresql/15/main.stator',
      log: {
        level: 'info',
        type: 'plain',
        dir: '/var/log/patroni',
        file_num: 10,
        file_size: 26214400,
        format: '%(asctime)s %(levelname)s: %(message)s',
      },
      fence: { agent_grace: 3, release_lease: true },
      event_log: DEFAULT_EVENT_LOG,
      watchdog: { mode: 'automatic', device: '/dev/watchdog', safety_margin: 5, driver: 'default' },
    });
    // bootstrap.dcs keeps Patroni's keys as written (master_start_timeout, synchronous_mode), defaults first.
    expect(Object.keys(config.bootstrap.dcs)).toEqual([
      'ttl',
      'loop_wait',
      'retry_timeout',
      'maximum_lag_on_failover',
      'master_start_timeout',
      'synchronous_mode',
      'postgresql',
    ]);
    expect(config.bootstrap.dcs.postgresql?.parameters).toMatchObject({ hot_standby: 'on', wal_keep_size: '128MB' });
    expect(effectiveDynamicConfig(null, config.bootstrap.dcs).config.primary_start_timeout).toBe(300);
  });

  it('builds the whole configuration from the environment alone, with the defaults', () => {
    const { config, warnings } = loadConfig(null, ENV_ONLY);

    expect(warnings).toEqual([]);
    expect(config).toEqual({
      scope: 'demo',
      namespace: '/service',
      name: 'stator1',
      compat: 'stator',
      restapi: { listen: '0.0.0.0:8008', connect_address: 'stator1:8008' },
      etcd3: { hosts: ['etcd:2379'], protocol: 'http' },
      bootstrap: {
        dcs: {
          ttl: 30,
          loop_wait: 10,
          retry_timeout: 10,
          maximum_lag_on_failover: 1048576,
          postgresql: { use_pg_rewind: true, use_slots: true },
        },
        method: 'initdb',
        methods: {},
        initdb: [],
      },
      postgresql: {
        listen: '0.0.0.0:5432',
        connect_address: 'stator1:5432',
        data_dir: '/var/lib/postgresql/stator/data',
        bin_dir: '/usr/lib/postgresql/15/bin',
        authentication: { superuser: { username: 'postgres' }, replication: { username: 'replicator' } },
        parameters: {},
        pg_hba: [],
        os_user: 'postgres',
        callbacks: {},
      },
      tags: {},
      state_dir: '/var/lib/postgresql/stator/data.stator',
      log: {
        level: 'info',
        type: 'plain',
        format: '%(asctime)s %(levelname)s: %(message)s',
        file_num: 4,
        file_size: 25_000_000,
      },
      fence: { agent_grace: 3, release_lease: true },
      event_log: DEFAULT_EVENT_LOG,
      watchdog: { mode: 'automatic', device: '/dev/watchdog', safety_margin: 5, driver: 'default' },
    } satisfies StatorConfig);
  });

  it('defaults connect_address to listen, and warns when listen is a wildcard', () => {
    const { config, warnings } = load({
      restapi: { listen: '10.0.0.5:8008' },
      postgresql: { listen: '*:5432' },
    });
    expect(config.restapi.connect_address).toBe('10.0.0.5:8008');
    expect(config.postgresql.connect_address).toBe('*:5432');
    expect(warnings).toEqual([
      'postgresql.connect_address is not set and postgresql.listen binds a wildcard address: other nodes will be ' +
        'told "*:5432"; set postgresql.connect_address',
    ]);
  });

  it('takes the first host of a multi-host postgresql.listen as the default connect_address', () => {
    const { config } = load({ postgresql: { listen: '10.0.0.5,127.0.0.1:5433' } });
    expect(config.postgresql.connect_address).toBe('10.0.0.5:5433');
  });

  it.each([
    ['/service', '/service'],
    ['service', '/service'],
    ['/service/', '/service'],
    ['//a//b/', '/a/b'],
    ['/', ''],
  ])('normalizes namespace %j to %j', (namespace, expected) => {
    expect(load({ namespace }).config.namespace).toBe(expected);
  });

  it.each([
    [true, true],
    [false, false],
    ['true', true],
    ['false', false],
    ['on', true],
    ['off', false],
    ['yes', true],
    ['no', false],
    ['On', true],
    ['NO', false],
  ])('accepts %j as the boolean %j, as Patroni does', (value, expected) => {
    expect(load({ tags: { nofailover: value } }).config.tags.nofailover).toBe(expected);
  });

  it('keeps custom tags as written', () => {
    const { config } = load({ tags: { zone: 'b', weight: 2, labels: ['x'] } });
    expect(config.tags).toEqual({ zone: 'b', weight: 2, labels: ['x'] });
  });

  it('accepts etcd3.host (single) and a port-less host', () => {
    expect(load({ etcd3: { hosts: undefined, host: 'etcd.internal' } }).config.etcd3.hosts).toEqual([
      'etcd.internal:2379',
    ]);
    expect(load({ etcd3: { hosts: ['[::1]:2379', 'etcd2'] } }).config.etcd3.hosts).toEqual([
      '[::1]:2379',
      'etcd2:2379',
    ]);
  });

  it('prefers etcd3.hosts over etcd3.host, as Patroni does', () => {
    expect(load({ etcd3: { host: 'one:2379', hosts: ['two:2379'] } }).config.etcd3.hosts).toEqual(['two:2379']);
  });

  it('accepts master_start_timeout without adding a primary_start_timeout default', () => {
    const { config } = load({ bootstrap: { dcs: { master_start_timeout: 0 } } });
    expect(config.bootstrap.dcs).not.toHaveProperty('primary_start_timeout');
    expect(effectiveDynamicConfig(null, config.bootstrap.dcs).config.primary_start_timeout).toBe(0);
  });

  it('treats an empty YAML value as not set', () => {
    const path = writeConfigFile(`${stringify(BASE)}bootstrap:\n  dcs:\n    ttl:\n    postgresql:\n      use_slots:\n`);
    const { config } = loadConfig(path, {});
    expect(config.bootstrap.dcs).toMatchObject({ ttl: 30, postgresql: { use_slots: true } });
  });

  describe('warnings', () => {
    it('clamps a bootstrap.dcs that breaks loop_wait + 2*retry_timeout <= ttl, as Patroni does, and says so', () => {
      const { config, warnings } = load({ bootstrap: { dcs: { ttl: 10, loop_wait: 10, retry_timeout: 3 } } });
      expect(warnings).toEqual([
        'bootstrap.dcs: loop_wait lowered from 10 to 4 because loop_wait + 2*retry_timeout must be <= ttl (10)',
      ]);
      // The section is written to /config as given; the clamping happens where it is applied.
      expect(config.bootstrap.dcs.loop_wait).toBe(10);
    });

    it('reads tag values given as strings, as the reference does', () => {
      const { config } = load({ tags: { failover_priority: '2', nofailover: 'false', nosync: 'off' } });
      expect(config.tags).toMatchObject({ failover_priority: '2', nofailover: false, nosync: false });
    });

    it('reads the cascading tags replicatefrom and nostream without a warning', () => {
      const { config, warnings } = load({ tags: { replicatefrom: 'n2', nostream: true } });
      expect(config.tags).toMatchObject({ replicatefrom: 'n2', nostream: true });
      expect(warnings).toEqual([]);
    });

    it('takes the dynamic keys Stator acts on in bootstrap.dcs without a warning', () => {
      const dcs = {
        synchronous_mode: true,
        failsafe_mode: true,
        standby_cluster: { host: 'x' },
        max_timelines_history: 10,
        primary_stop_timeout: 5,
      };
      const { warnings } = load({
        bootstrap: { dcs: { ...dcs, postgresql: { remove_data_directory_on_rewind_failure: false } } },
      });
      expect(warnings).toEqual([]);
    });

    it('refuses a citus section, which it would otherwise run without its coordinator metadata', () => {
      expect(problemsOf(() => load({ citus: { group: 0, database: 'citus' } }))).toEqual([
        'citus: Citus clusters are not supported by Stator (it does not register workers with the coordinator); remove the section, or run this cluster with Patroni',
      ]);
    });

    it('ignores another DCS section next to etcd3 with a warning', () => {
      const { warnings } = load({ consul: { host: 'c:8500' } });
      expect(warnings).toEqual(['unsupported key consul ignored (only etcd3 is supported as DCS)']);
    });

    it('ignores unsupported keys at every level', () => {
      const { warnings } = load({
        restapi: { ciphers_of_tomorrow: 'HIGH' },
        etcd3: { discovery_of_tomorrow: 'a' },
        bootstrap: {
          post_bootstrap: '/x.sh',
          custom: { command: '/c.sh', no_params: true, recovery_conf: { restore_command: 'cp %p' } },
        },
        postgresql: { authentication: { superuser: { sslmode: 'require', sslcompression: 1 } } },
      });
      expect(warnings).toEqual([
        'unsupported key restapi.ciphers_of_tomorrow ignored',
        'unsupported key etcd3.discovery_of_tomorrow ignored',
        'unsupported key postgresql.authentication.superuser.sslcompression ignored',
      ]);
    });

    it('reads custom replica methods and a custom bootstrap as the reference: command, flags, recovery_conf, and the other keys as arguments', () => {
      const { config, warnings } = load({
        bootstrap: {
          method: 'pitr',
          pitr: {
            command: '/restore.sh --from=s3',
            keep_existing_recovery_conf: true,
            recovery_conf: { recovery_target_action: 'promote', restore_command: 'cp /a/%f %p' },
            stanza: 'main',
          },
        },
        postgresql: {
          create_replica_methods: ['pgbackrest', 'basebackup'],
          pgbackrest: {
            command: '/usr/bin/pgbackrest --stanza=main restore',
            keep_data: true,
            no_params: true,
            delta: true,
            'process-max': 4,
          },
        },
      });
      expect(warnings).toEqual([]);
      expect(config.bootstrap.methods.pitr).toEqual({
        command: '/restore.sh --from=s3',
        options: { stanza: 'main' },
        keep_existing_recovery_conf: true,
        recovery_conf: { recovery_target_action: 'promote', restore_command: 'cp /a/%f %p' },
      });
      expect(config.postgresql.create_replica_methods).toEqual(['pgbackrest', 'basebackup']);
      expect(config.postgresql.replica_methods).toEqual({
        pgbackrest: {
          command: '/usr/bin/pgbackrest --stanza=main restore',
          no_params: true,
          options: { keep_data: true, delta: true, 'process-max': 4 },
        },
      });
    });

    it('refuses a replica method section that is not a mapping of scalars, naming the key', () => {
      expect(
        problemsOf(() =>
          load({ postgresql: { create_replica_methods: ['wale'], wale: { command: '/w.sh', envdir: ['a'] } } }),
        ),
      ).toEqual(['postgresql.wale.envdir: must be a string, a number or a boolean, got ["a"]']);
    });

    it("reads the roles' libpq options, the rewind role, unix sockets, pgpass, basebackup options and post_bootstrap as Patroni's acceptance harness writes them", () => {
      const tls = { sslmode: 'verify-ca', sslrootcert: '/ca.crt', sslcert: '/c.crt', sslkey: '/c.key' };
      const { config, warnings } = load({
        bootstrap: { post_bootstrap: 'psql -w -c "SELECT 1"' },
        postgresql: {
          authentication: {
            superuser: { username: 'postgres', ...tls },
            replication: { username: 'replicator', ...tls },
            rewind: { username: 'rewind_user', password: 'r' },
          },
          use_unix_socket: true,
          use_unix_socket_repl: 'on',
          pgpass: '/tmp/pgpass_0',
          basebackup: [{ checkpoint: 'fast' }, 'verbose'],
        },
      });
      expect(warnings).toEqual([]);
      expect(config.bootstrap.post_bootstrap).toBe('psql -w -c "SELECT 1"');
      expect(config.postgresql).toMatchObject({
        authentication: {
          superuser: { libpq: tls },
          replication: { libpq: tls },
          rewind: { username: 'rewind_user', password: 'r' },
        },
        use_unix_socket: true,
        use_unix_socket_repl: true,
        pgpass: '/tmp/pgpass_0',
        basebackup: [{ checkpoint: 'fast' }, 'verbose'],
      });
    });

    it('reads config_dir, custom_conf, pg_ident, recovery_conf and bootstrap.pg_hba without a warning', () => {
      const customConf = join(FIXTURES, 'patroni-3-etcd3.yml');
      const { config, warnings } = load({
        bootstrap: { pg_hba: ['host all all 10.0.0.0/8 scram-sha-256'] },
        postgresql: {
          config_dir: '/etc/postgresql/15/main',
          custom_conf: customConf,
          pg_ident: ['omicron bryanh bryan'],
          recovery_conf: { restore_command: 'cp /archive/%f %p', recovery_min_apply_delay: '5min' },
        },
      });
      expect(warnings).toEqual([]);
      expect(config.bootstrap.pg_hba).toEqual(['host all all 10.0.0.0/8 scram-sha-256']);
      expect(config.postgresql).toMatchObject({
        config_dir: '/etc/postgresql/15/main',
        custom_conf: customConf,
        pg_ident: ['omicron bryanh bryan'],
        recovery_conf: { restore_command: 'cp /archive/%f %p', recovery_min_apply_delay: '5min' },
      });
      expect(
        loadConfig(null, { ...ENV_ONLY, PATRONI_POSTGRESQL_CONFIG_DIR: '/etc/pg' }).config.postgresql.config_dir,
      ).toBe('/etc/pg');
    });

    it('leaves out the recovery settings Stator decides, with a warning naming each', () => {
      const { config, warnings } = load({
        postgresql: {
          recovery_conf: {
            restore_command: 'x',
            primary_conninfo: 'host=a',
            recovery_target_time: 'now',
            standby_mode: 'on',
          },
        },
      });
      expect(config.postgresql.recovery_conf).toEqual({ restore_command: 'x' });
      expect(warnings).toEqual([
        expect.stringMatching(/^postgresql\.recovery_conf\.primary_conninfo ignored: Stator decides it/),
        expect.stringMatching(/^postgresql\.recovery_conf\.recovery_target_time ignored/),
        expect.stringMatching(/^postgresql\.recovery_conf\.standby_mode ignored/),
      ]);
    });

    it('refuses a missing custom_conf, bad pg_ident and recovery_conf, and bootstrap.users, naming the key and the rule', () => {
      expect(() => load({ postgresql: { custom_conf: '/nonexistent/custom.conf' } })).toThrow(
        /postgresql\.custom_conf: \/nonexistent\/custom\.conf is not a readable file/,
      );
      expect(() => load({ postgresql: { pg_ident: 'map a b' } })).toThrow(
        /postgresql\.pg_ident: must be a list of strings/,
      );
      expect(() => load({ postgresql: { recovery_conf: ['restore_command'] } })).toThrow(
        /postgresql\.recovery_conf: must be a mapping of recovery settings/,
      );
      expect(() => load({ postgresql: { recovery_conf: { restore_command: 'a\nb' } } })).toThrow(
        /postgresql\.recovery_conf\.restore_command: must not contain control characters/,
      );
      expect(() => load({ bootstrap: { users: { admin: { password: 'x' } } } })).toThrow(
        /bootstrap\.users: removed in Patroni 4\.0 and not supported: create roles in a bootstrap\.post_bootstrap script/,
      );
    });

    it('accepts pg_hba, pg_ident and recovery_conf in /config and refuses them malformed', () => {
      const written = {
        postgresql: {
          pg_hba: ['host all all 0.0.0.0/0 md5'],
          pg_ident: ['m a b'],
          recovery_conf: { restore_command: 'cp %p' },
        },
      };
      expect(validateDynamicConfigKeys(written)).toEqual([]);
      expect(reviewConfigWrite(written)).toEqual({ problems: [] });
      // use_unix_socket_repl changes nothing in Stator; use_unix_socket is node-local, refused with where to set it.
      expect(reviewConfigWrite({ postgresql: { use_unix_socket_repl: true, use_unix_socket: true } })).toEqual({
        problems: [
          expect.stringMatching(
            /^postgresql\.use_unix_socket: how this agent connects to its own server is node-local in Stator .*set postgresql\.use_unix_socket in each node's configuration file$/,
          ),
        ],
      });
      expect(validateDynamicConfigKeys({ postgresql: { use_unix_socket: 'maybe' } })).toEqual([
        expect.stringMatching(/^postgresql\.use_unix_socket: must be a boolean/),
      ]);
      expect(effectiveDynamicConfig(written, {}).config).toMatchObject({
        pg_hba: ['host all all 0.0.0.0/0 md5'],
        pg_ident: ['m a b'],
        recovery_conf: { restore_command: 'cp %p' },
      });
      expect(
        validateDynamicConfigKeys({
          postgresql: {
            pg_hba: 'host all all 0.0.0.0/0 md5',
            pg_ident: ['a\nb'],
            recovery_conf: { primary_conninfo: 'host=x' },
          },
        }),
      ).toEqual([
        expect.stringMatching(/^postgresql\.pg_hba: must be a list of strings/),
        expect.stringMatching(/^postgresql\.pg_ident: must be a list of strings/),
        expect.stringMatching(/^postgresql\.recovery_conf\.primary_conninfo: Stator decides it/),
      ]);
      // A stored document written by anyone: what cannot be used is left out and said.
      const { config, adjustments } = effectiveDynamicConfig(
        { postgresql: { pg_hba: 7, recovery_conf: { recovery_target: 'immediate', restore_command: 'x' } } },
        {},
      );
      expect(config).toMatchObject({ pg_hba: [], recovery_conf: { restore_command: 'x' } });
      expect(adjustments).toEqual([
        'postgresql.recovery_conf.recovery_target in the DCS configuration ignored: Stator decides it for a replica',
        'postgresql.pg_hba in the DCS configuration ignored: must be a list of strings (one line each)',
      ]);
    });

    it('refuses an sslmode libpq does not know and a basebackup option that is not a name, naming the key', () => {
      expect(() => load({ postgresql: { authentication: { superuser: { sslmode: 'maybe' } } } })).toThrow(
        /postgresql\.authentication\.superuser\.sslmode: must be one of disable, allow, prefer, require, verify-ca, verify-full/,
      );
      expect(() => load({ postgresql: { basebackup: ['--max-rate=1; rm -rf /'] } })).toThrow(
        /postgresql\.basebackup\[0\]: must be a list of option names/,
      );
    });

    it('warns about PATRONI_ variables it does not support, without showing their values', () => {
      const { warnings } = loadConfig(null, { ...ENV_ONLY, PATRONI_admin_PASSWORD: 'secret', PATRONI_LOG_DIR: '/x' });
      expect(warnings).toEqual([
        'unsupported environment variable PATRONI_admin_PASSWORD ignored',
        'unsupported environment variable PATRONI_LOG_DIR ignored',
      ]);
    });
  });

  describe('environment overrides', () => {
    const FILE: Doc = withBase({
      namespace: '/file',
      restapi: {
        connect_address: 'file:8008',
        authentication: { username: 'file', password: 'file' },
        certfile: '/file.crt',
        keyfile: '/file.key',
        cafile: '/file-ca.crt',
        verify_client: 'none',
        allowlist: ['10.0.0.0/8'],
      },
      etcd3: { protocol: 'http', username: 'file', password: 'file' },
      postgresql: {
        connect_address: 'file:5432',
        bin_dir: '/file/bin',
        authentication: { superuser: { username: 'file', password: 'file' } },
      },
      log: { level: 'error' },
    });
    const fileConfig = () => writeConfigFile(stringify(FILE, { version: '1.1' }));

    const SETTINGS: Array<[string, string, (config: StatorConfig) => unknown, unknown?]> = [
      ['SCOPE', 'env-scope', (c) => c.scope],
      ['NAMESPACE', 'env-ns/', (c) => c.namespace, '/env-ns'],
      ['NAME', 'env-name', (c) => c.name],
      ['RESTAPI_LISTEN', '127.0.0.2:9008', (c) => c.restapi.listen],
      ['RESTAPI_CONNECT_ADDRESS', 'env:9008', (c) => c.restapi.connect_address],
      ['RESTAPI_USERNAME', 'env-user', (c) => c.restapi.authentication?.username],
      ['RESTAPI_PASSWORD', 'env-pass', (c) => c.restapi.authentication?.password],
      ['RESTAPI_CERTFILE', '/env.crt', (c) => c.restapi.certfile],
      ['RESTAPI_KEYFILE', '/env.key', (c) => c.restapi.keyfile],
      ['RESTAPI_CAFILE', '/env-ca.crt', (c) => c.restapi.cafile],
      ['RESTAPI_VERIFY_CLIENT', 'required', (c) => c.restapi.verify_client],
      ['RESTAPI_ALLOWLIST', '10.1.0.0/16, 10.2.0.0/16', (c) => c.restapi.allowlist, ['10.1.0.0/16', '10.2.0.0/16']],
      ['ETCD3_HOSTS', 'e1:2379,e2:2379', (c) => c.etcd3.hosts, ['e1:2379', 'e2:2379']],
      ['ETCD3_HOST', 'e9:2379', (c) => c.etcd3.hosts, ['e9:2379']],
      ['ETCD3_PROTOCOL', 'https', (c) => c.etcd3.protocol],
      ['ETCD3_USERNAME', 'env-user', (c) => c.etcd3.username],
      ['ETCD3_PASSWORD', 'env-pass', (c) => c.etcd3.password],
      ['POSTGRESQL_LISTEN', '127.0.0.2:6432', (c) => c.postgresql.listen],
      ['POSTGRESQL_CONNECT_ADDRESS', 'env:6432', (c) => c.postgresql.connect_address],
      ['POSTGRESQL_DATA_DIR', '/env/data', (c) => c.postgresql.data_dir],
      ['POSTGRESQL_BIN_DIR', '/env/bin', (c) => c.postgresql.bin_dir],
      ['SUPERUSER_USERNAME', 'env-su', (c) => c.postgresql.authentication.superuser.username],
      ['SUPERUSER_PASSWORD', 'env-su-pass', (c) => c.postgresql.authentication.superuser.password],
      ['REPLICATION_USERNAME', 'env-repl', (c) => c.postgresql.authentication.replication.username],
      ['REPLICATION_PASSWORD', 'env-repl-pass', (c) => c.postgresql.authentication.replication.password],
      ['LOG_LEVEL', 'WARNING', (c) => c.log.level, 'warning'],
      ['COMPAT', 'patroni', (c) => c.compat],
    ];

    it('reads the etcd TLS files from PATRONI_ETCD3_CACERT, _CERT and _KEY', () => {
      const env = {
        PATRONI_ETCD3_PROTOCOL: 'https',
        PATRONI_ETCD3_CACERT: __filename,
        PATRONI_ETCD3_CERT: __filename,
        PATRONI_ETCD3_KEY: __filename,
      };
      const { config } = loadConfig(fileConfig(), env);
      expect(config.etcd3).toMatchObject({ protocol: 'https', cacert: __filename, cert: __filename, key: __filename });
    });

    it.each(SETTINGS)('PATRONI_%s overrides the file', (name, value, read, expected = value) => {
      const { config } = loadConfig(fileConfig(), { [`PATRONI_${name}`]: value });
      expect(read(config)).toEqual(expected);
    });

    it.each(SETTINGS)('STATOR_%s wins over the PATRONI_ one', (name, value, read, expected = value) => {
      const decoys: Record<string, string> = {
        ETCD3_HOSTS: 'decoy:2379',
        ETCD3_HOST: 'decoy:2379',
        RESTAPI_VERIFY_CLIENT: 'optional',
        COMPAT: 'stator',
      };
      const env = { [`PATRONI_${name}`]: decoys[name] ?? 'decoy', [`STATOR_${name}`]: value };
      const { config } = loadConfig(fileConfig(), env);
      expect(read(config)).toEqual(expected);
    });

    it('reads site from the file or PATRONI_SITE, and has none by default', () => {
      expect(load({ site: 'dc1' }).config.site).toBe('dc1');
      expect(load({ site: 'dc1' }, { PATRONI_SITE: 'dc2' }).config.site).toBe('dc2');
      expect(load().config).not.toHaveProperty('site');
    });

    it('ignores empty variables, as Patroni does', () => {
      const { config } = loadConfig(fileConfig(), { PATRONI_NAME: '', STATOR_SCOPE: '' });
      expect(config).toMatchObject({ name: 'n1', scope: 'demo' });
    });

    it.each([
      ['h1:2379,h2:2379', ['h1:2379', 'h2:2379']],
      ["['h1:2379','h2:2379']", ['h1:2379', 'h2:2379']],
      ['["h1:2379", "h2:2379"]', ['h1:2379', 'h2:2379']],
      ['- h1:2379\n- h2', ['h1:2379', 'h2:2379']],
      [' h1:2379 ', ['h1:2379']],
    ])('parses PATRONI_ETCD3_HOSTS=%j', (value, expected) => {
      expect(loadConfig(null, { ...ENV_ONLY, PATRONI_ETCD3_HOSTS: value }).config.etcd3.hosts).toEqual(expected);
    });

    it('replaces both etcd3.host and etcd3.hosts of the file', () => {
      const path = writeConfigFile(stringify(withBase({ etcd3: { hosts: ['file:2379'], host: 'file1:2379' } })));
      expect(loadConfig(path, { PATRONI_ETCD3_HOST: 'env:2379' }).config.etcd3.hosts).toEqual(['env:2379']);
    });

    it('lets STATOR_ETCD3_HOST win over PATRONI_ETCD3_HOSTS, and HOSTS over HOST within one prefix', () => {
      const both = { PATRONI_ETCD3_HOSTS: 'p1:2379,p2:2379', STATOR_ETCD3_HOST: 's:2379' };
      expect(loadConfig(fileConfig(), both).config.etcd3.hosts).toEqual(['s:2379']);
      const samePrefix = { PATRONI_ETCD3_HOST: 'one:2379', PATRONI_ETCD3_HOSTS: 'many1:2379,many2:2379' };
      expect(loadConfig(fileConfig(), samePrefix).config.etcd3.hosts).toEqual(['many1:2379', 'many2:2379']);
    });

    it('does not touch the caller’s environment', () => {
      const env = { ...ENV_ONLY };
      loadConfig(null, env);
      expect(env).toEqual(ENV_ONLY);
    });
  });

  describe('errors', () => {
    it.each<[string, Doc, NodeJS.ProcessEnv, string]>([
      [
        'a missing data_dir',
        { postgresql: { data_dir: undefined } },
        {},
        'postgresql.data_dir: required (or PATRONI_POSTGRESQL_DATA_DIR)',
      ],
      ['a missing scope', { scope: undefined }, {}, 'scope: required (or PATRONI_SCOPE)'],
      ['a missing name', { name: '' }, {}, 'name: required (or PATRONI_NAME)'],
      ['a slash in the name', { name: 'a/b' }, {}, 'name: must not contain "/", got "a/b"'],
      ['an empty site', { site: ' ' }, {}, `site: can't be empty, got " "`],
      ['a site that is not a string', { site: ['dc1'] }, {}, 'site: must be a string, got ["dc1"]'],
      ['a bad compat', { compat: 'consul' }, {}, 'compat: must be one of stator, patroni, got "consul"'],
      ['a missing restapi.listen', { restapi: undefined }, {}, 'restapi.listen: required (or PATRONI_RESTAPI_LISTEN)'],
      ['a section that is not a mapping', { tags: 'x' }, {}, 'tags: must be a mapping, got "x"'],
      ['a listen without port', { restapi: { listen: 'abc' } }, {}, 'restapi.listen: must be host:port, got "abc"'],
      [
        'a port out of range',
        { restapi: { listen: 'h:70000' } },
        {},
        'restapi.listen: must be host:port, got "h:70000"',
      ],
      [
        'several REST API hosts',
        { restapi: { listen: 'a,b:8008' } },
        {},
        'restapi.listen: must be host:port, got "a,b:8008"',
      ],
      [
        'a bad listen from the environment',
        {},
        { PATRONI_RESTAPI_LISTEN: 'abc' },
        'restapi.listen: must be host:port, got "abc" (from PATRONI_RESTAPI_LISTEN)',
      ],
      [
        'a wildcard connect_address',
        { restapi: { connect_address: '0.0.0.0:8008' } },
        {},
        'restapi.connect_address: must name a host other nodes can reach, not a wildcard address, got "0.0.0.0:8008"',
      ],
      [
        'a REST API username without password',
        {},
        { PATRONI_RESTAPI_USERNAME: 'admin' },
        'restapi.authentication.password: required (or PATRONI_RESTAPI_PASSWORD)',
      ],
      ['a keyfile without certfile', { restapi: { keyfile: '/k' } }, {}, 'restapi.keyfile: requires restapi.certfile'],
      [
        'an admin authentication scope with nothing to check',
        { restapi: { authentication_scope: 'admin' } },
        {},
        'restapi.authentication_scope: "admin" requires restapi.authentication, restapi.allowlist, restapi.allowlist_include_members or restapi.verify_client',
      ],
      [
        'verify_client without cafile',
        { restapi: { certfile: '/c', verify_client: 'required' } },
        {},
        'restapi.verify_client: "required" requires restapi.cafile',
      ],
      [
        'a bad verify_client',
        { restapi: { verify_client: 'always' } },
        {},
        'restapi.verify_client: must be one of none, optional, required, got "always"',
      ],
      [
        'an allowlist that is not a list',
        { restapi: { allowlist: '10.0.0.0/8' } },
        {},
        'restapi.allowlist: must be a list of strings, got "10.0.0.0/8"',
      ],
      ['no etcd3 hosts', { etcd3: undefined }, {}, 'etcd3.hosts: required (or PATRONI_ETCD3_HOSTS)'],
      ['an empty etcd3 hosts list', { etcd3: { hosts: [] } }, {}, 'etcd3.hosts: required (or PATRONI_ETCD3_HOSTS)'],
      [
        'an etcd v2 section instead of etcd3',
        { etcd3: undefined, etcd: { hosts: ['h:2379'] } },
        {},
        'etcd: only etcd3 is supported as DCS; etcd v2 is not: rename the section to etcd3 (same hosts, v3 API)',
      ],
      [
        'an etcd v2 variable instead of etcd3',
        { etcd3: undefined },
        { PATRONI_ETCD_HOSTS: 'h:2379' },
        'etcd: only etcd3 is supported as DCS; etcd v2 is not: rename the section to etcd3 (same hosts, v3 API) (from PATRONI_ETCD_HOSTS)',
      ],
      [
        'another DCS instead of etcd3',
        { etcd3: undefined, consul: { host: 'c:8500' } },
        {},
        'consul: only etcd3 is supported as DCS',
      ],
      [
        'an etcd3 host with a scheme',
        { etcd3: { hosts: ['h1:2379', 'https://h2:2379'] } },
        {},
        'etcd3.hosts[1]: must be host:port without a scheme (use etcd3.protocol for https), got "https://h2:2379"',
      ],
      [
        'an unparsable PATRONI_ETCD3_HOSTS',
        {},
        { PATRONI_ETCD3_HOSTS: "['h1:2379'" },
        `etcd3.hosts: PATRONI_ETCD3_HOSTS must be a list ("a,b" or "['a','b']"), got "['h1:2379'"`,
      ],
      [
        'an etcd3 certificate without https',
        { etcd3: { hosts: ['h1:2379'], cacert: __filename } },
        {},
        'etcd3.cacert: requires etcd3.protocol: https',
      ],
      [
        'an etcd3 certificate file that cannot be read',
        { etcd3: { hosts: ['h1:2379'], protocol: 'https', cert: '/nonexistent/client.pem' } },
        {},
        'etcd3.cert: cannot read /nonexistent/client.pem',
      ],
      [
        'a bad etcd3 protocol',
        { etcd3: { protocol: 'grpc' } },
        {},
        'etcd3.protocol: must be one of http, https, got "grpc"',
      ],
      [
        'an etcd3 username without password',
        { etcd3: { username: 'u' } },
        {},
        'etcd3.password: required (or PATRONI_ETCD3_PASSWORD)',
      ],
      [
        'a non-integer ttl',
        { bootstrap: { dcs: { ttl: 'x' } } },
        {},
        'bootstrap.dcs.ttl: must be an integer from 5 to 86400, got "x"',
      ],
      [
        'a ttl below 5',
        { bootstrap: { dcs: { ttl: 4 } } },
        {},
        'bootstrap.dcs.ttl: must be an integer from 5 to 86400, got 4',
      ],
      [
        'a fractional loop_wait',
        { bootstrap: { dcs: { loop_wait: 1.5 } } },
        {},
        'bootstrap.dcs.loop_wait: must be an integer from 1 to 86400, got 1.5',
      ],
      [
        'a zero retry_timeout',
        { bootstrap: { dcs: { retry_timeout: 0 } } },
        {},
        'bootstrap.dcs.retry_timeout: must be an integer from 1 to 86400, got 0',
      ],
      [
        'a string maximum_lag_on_failover',
        { bootstrap: { dcs: { maximum_lag_on_failover: '1MB' } } },
        {},
        'bootstrap.dcs.maximum_lag_on_failover: must be an integer from 0 to 9007199254740991, got "1MB"',
      ],
      [
        'a bad check_timeline',
        { bootstrap: { dcs: { check_timeline: 'maybe' } } },
        {},
        'bootstrap.dcs.check_timeline: must be a boolean (true/false, on/off, yes/no), got "maybe"',
      ],
      [
        'a bad use_pg_rewind',
        { bootstrap: { dcs: { postgresql: { use_pg_rewind: 'sometimes' } } } },
        {},
        'bootstrap.dcs.postgresql.use_pg_rewind: must be a boolean (true/false, on/off, yes/no), got "sometimes"',
      ],
      [
        'a list as a bootstrap parameter',
        { bootstrap: { dcs: { postgresql: { parameters: { shared_preload_libraries: ['a'] } } } } },
        {},
        'bootstrap.dcs.postgresql.parameters.shared_preload_libraries: must be a string, number or boolean, got ["a"]',
      ],
      [
        'a bootstrap.dcs that is not a mapping',
        { bootstrap: { dcs: ['ttl'] } },
        {},
        'bootstrap.dcs: must be a mapping, got ["ttl"]',
      ],
      [
        'a custom method without its section',
        { bootstrap: { method: 'restore' } },
        {},
        'bootstrap.restore.command: required because bootstrap.method is "restore"',
      ],
      [
        'a custom method without command',
        { bootstrap: { method: 'restore', restore: { keep: 1 } } },
        {},
        'bootstrap.restore.command: required',
      ],
      [
        'initdb as a string',
        { bootstrap: { initdb: '--data-checksums' } },
        {},
        'bootstrap.initdb: must be a list; each item must be an option name or a single-key mapping (name: value), got "--data-checksums"',
      ],
      [
        'an initdb item with two keys',
        { bootstrap: { initdb: ['data-checksums', { encoding: 'UTF8', locale: 'C' }] } },
        {},
        'bootstrap.initdb[1]: must be an option name or a single-key mapping (name: value), got {"encoding":"UTF8","locale":"C"}',
      ],
      [
        'a listen without port for PostgreSQL',
        { postgresql: { listen: '5432' } },
        {},
        'postgresql.listen: must be host:port, got "5432"',
      ],
      [
        'a mapping as a parameter',
        { postgresql: { parameters: { shared_buffers: { size: 1 } } } },
        {},
        'postgresql.parameters.shared_buffers: must be a string, number or boolean, got {"size":1}',
      ],
      [
        'a non-string pg_hba line',
        { postgresql: { pg_hba: [{ host: 'all' }] } },
        {},
        'postgresql.pg_hba[0]: must be a string, got {"host":"all"}',
      ],
      [
        'a bad tag boolean',
        { tags: { nofailover: 'maybe' } },
        {},
        'tags.nofailover: must be a boolean (true/false, on/off, yes/no), got "maybe"',
      ],
      [
        'a negative failover_priority',
        { tags: { failover_priority: -1 } },
        {},
        'tags.failover_priority: must be an integer >= 0, got -1',
      ],
      [
        'a bad log level',
        { log: { level: 'verbose' } },
        {},
        'log.level: must be one of debug, info, warning, error, got "verbose"',
      ],
    ])('reports %s', (_case, overrides, env, problem) => {
      expect(problemsOf(() => load(overrides, env))).toEqual([problem]);
    });

    it('never shows a password in a message', () => {
      const problems = problemsOf(() =>
        load({ postgresql: { authentication: { superuser: { password: ['hunter2'] } } } }),
      );
      expect(problems).toEqual(['postgresql.authentication.superuser.password: must be a string']);
    });

    it('reports every problem at once, in file order', () => {
      const problems = problemsOf(() =>
        loadConfig(writeConfigFile('restapi:\n  listen: abc\nbootstrap:\n  dcs:\n    ttl: x\n'), {}),
      );
      expect(problems).toEqual([
        'scope: required (or PATRONI_SCOPE)',
        'name: required (or PATRONI_NAME)',
        'restapi.listen: must be host:port, got "abc"',
        'etcd3.hosts: required (or PATRONI_ETCD3_HOSTS)',
        'bootstrap.dcs.ttl: must be an integer from 5 to 86400, got "x"',
        'postgresql.listen: required (or PATRONI_POSTGRESQL_LISTEN)',
        'postgresql.data_dir: required (or PATRONI_POSTGRESQL_DATA_DIR)',
      ]);
    });

    it('reports a file that cannot be read', () => {
      const path = join(tempDir, 'missing.yml');
      expect(problemsOf(() => loadConfig(path, ENV_ONLY))).toEqual([
        `${path}: cannot read the configuration file (ENOENT)`,
      ]);
    });

    it('reports YAML syntax errors with their position', () => {
      const path = writeConfigFile('scope: a\nscope: b\n');
      const [problem] = problemsOf(() => loadConfig(path, ENV_ONLY));
      expect(problem).toMatch(new RegExp(`^${path}: Map keys must be unique at line 2, column 1`));
    });

    it('reports a file that is not a mapping', () => {
      const path = writeConfigFile('- scope\n');
      expect(problemsOf(() => loadConfig(path, ENV_ONLY))).toEqual([
        `${path}: the configuration must be a mapping, got ["scope"]`,
      ]);
    });

    it('has a message that lists the problems', () => {
      const error = (() => {
        try {
          loadConfig(null, {});
        } catch (caught) {
          return caught as ConfigError;
        }
        throw new Error('expected a ConfigError');
      })();
      expect(error.name).toBe('ConfigError');
      expect(error.message).toMatch(/^invalid configuration:\n {2}scope: required \(or PATRONI_SCOPE\)\n/);
    });
  });
});

describe('effectiveDynamicConfig', () => {
  /** A DCS document written without validation (by Patroni, or by hand with etcdctl). */
  const asWrittenByAnyone = (doc: object) => doc as DynamicConfig;

  it('uses the defaults when nothing is set', () => {
    expect(effectiveDynamicConfig(null, {})).toEqual({
      config: {
        ttl: 30,
        loop_wait: 10,
        retry_timeout: 10,
        maximum_lag_on_failover: 1048576,
        check_timeline: false,
        primary_start_timeout: 300,
        primary_stop_timeout: 0,
        max_timelines_history: 0,
        remove_data_directory_on_rewind_failure: true,
        remove_data_directory_on_diverged_timelines: true,
        pause: false,
        use_pg_rewind: true,
        use_slots: true,
        postgres_unresponsive_timeout: 15,
        synchronous_mode: 'off',
        synchronous_mode_strict: false,
        synchronous_node_count: 1,
        synchronous_site_count: 0,
        maximum_lag_on_syncnode: -1,
        failsafe_mode: false,
        member_slots_ttl: 1800,
        load_balancer_drain_ms: 750,
        primary_race_backoff: 0,
        parameters: {},
        pg_hba: [],
        pg_ident: [],
        recovery_conf: {},
        slots: [],
        ignore_slots: [],
        standby_cluster: null,
      },
      adjustments: [],
    });
  });

  it('takes half the ttl as postgres_unresponsive_timeout unless it is set, and 0 turns the check off', () => {
    expect(
      effectiveDynamicConfig({ ttl: 10, loop_wait: 2, retry_timeout: 4 }, {}).config.postgres_unresponsive_timeout,
    ).toBe(5);
    expect(
      effectiveDynamicConfig({ ttl: 10, loop_wait: 2, retry_timeout: 4, postgres_unresponsive_timeout: 3 }, {}).config
        .postgres_unresponsive_timeout,
    ).toBe(3);
    expect(effectiveDynamicConfig({ postgres_unresponsive_timeout: 0 }, {}).config.postgres_unresponsive_timeout).toBe(
      0,
    );
  });

  it('uses bootstrap.dcs until the DCS has a configuration', () => {
    const bootstrap = { ttl: 20, pause: true, postgresql: { use_slots: false, parameters: { max_connections: 50 } } };
    expect(effectiveDynamicConfig(null, bootstrap).config).toMatchObject({
      ttl: 20,
      pause: true,
      use_slots: false,
      parameters: { max_connections: 50 },
    });
  });

  it('lets the DCS configuration replace bootstrap.dcs as a whole, as Patroni does', () => {
    const bootstrap = { ttl: 60, loop_wait: 5, postgresql: { parameters: { max_connections: 50 } } };
    const fromDcs = { loop_wait: 3, postgresql: { parameters: { work_mem: '8MB' } } };
    expect(effectiveDynamicConfig(fromDcs, bootstrap).config).toMatchObject({
      ttl: 30,
      loop_wait: 3,
      parameters: { work_mem: '8MB' },
    });
  });

  it('reads master_start_timeout as primary_start_timeout, the new name winning', () => {
    expect(effectiveDynamicConfig({ master_start_timeout: 0 }, {}).config.primary_start_timeout).toBe(0);
    expect(
      effectiveDynamicConfig({ master_start_timeout: 0, primary_start_timeout: 60 }, {}).config.primary_start_timeout,
    ).toBe(60);
  });

  it('reads what Patroni reads from a DCS document: integer strings and boolean words', () => {
    const fromDcs = asWrittenByAnyone({ ttl: '40', check_timeline: 'on', postgresql: { use_pg_rewind: 'off' } });
    expect(effectiveDynamicConfig(fromDcs, {})).toMatchObject({
      config: { ttl: 40, check_timeline: true, use_pg_rewind: false },
      adjustments: [],
    });
  });

  it('falls back to the defaults for unusable DCS values, and says so', () => {
    const fromDcs = asWrittenByAnyone({
      ttl: 'abc',
      pause: 'maybe',
      postgresql: { parameters: { a: 1, b: { c: 2 } } },
    });
    expect(effectiveDynamicConfig(fromDcs, {})).toEqual({
      config: expect.objectContaining({ ttl: 30, pause: false, parameters: { a: 1 } }),
      adjustments: [
        'ttl "abc" in the DCS configuration is not an integer; using the default 30',
        'postgresql.parameters.b {"c":2} in the DCS configuration ignored: must be a string, number or boolean',
        'pause "maybe" in the DCS configuration is not a boolean; using the default false',
      ],
    });
  });

  const because = (ttl: number) => `because loop_wait + 2*retry_timeout must be <= ttl (${ttl})`;
  it.each<[string, [number, number, number], [number, number, number], string[]]>([
    ['keeps the defaults', [30, 10, 10], [30, 10, 10], []],
    ['keeps a fast lab cluster (below Patroni’s minimums)', [10, 2, 3], [10, 2, 3], []],
    ['keeps the smallest allowed values', [5, 1, 1], [5, 1, 1], []],
    ['lowers a too long loop_wait', [10, 10, 3], [10, 4, 3], [`loop_wait lowered from 10 to 4 ${because(10)}`]],
    [
      'lowers loop_wait to 1, then retry_timeout (Patroni’s example)',
      [20, 2, 10],
      [20, 1, 9],
      [`loop_wait lowered from 2 to 1 ${because(20)}`, `retry_timeout lowered from 10 to 9 ${because(20)}`],
    ],
    [
      'lowers only retry_timeout when loop_wait is already 1',
      [10, 1, 10],
      [10, 1, 4],
      [`retry_timeout lowered from 10 to 4 ${because(10)}`],
    ],
    [
      'raises ttl to the minimum, then lowers the others',
      [3, 10, 10],
      [5, 1, 2],
      [
        'ttl raised from 3 to 5 (the minimum)',
        `loop_wait lowered from 10 to 1 ${because(5)}`,
        `retry_timeout lowered from 10 to 2 ${because(5)}`,
      ],
    ],
    [
      'raises zero loop_wait and retry_timeout to 1',
      [30, 0, 0],
      [30, 1, 1],
      ['loop_wait raised from 0 to 1 (the minimum)', 'retry_timeout raised from 0 to 1 (the minimum)'],
    ],
  ])('%s', (_case, [ttl, loopWait, retryTimeout], [expectedTtl, expectedLoopWait, expectedRetry], expected) => {
    const fromDcs = { ttl, loop_wait: loopWait, retry_timeout: retryTimeout };
    const { config, adjustments } = effectiveDynamicConfig(fromDcs, {});
    const clamped = [config.ttl, config.loop_wait, config.retry_timeout];
    expect(clamped).toEqual([expectedTtl, expectedLoopWait, expectedRetry]);
    expect(config.loop_wait + 2 * config.retry_timeout).toBeLessThanOrEqual(config.ttl);
    expect(adjustments).toEqual(expected);
  });
});

describe('effectiveConfigOfRevision', () => {
  it('computes the configuration again only when the revision of /config or the bootstrap section changes', () => {
    const effective = effectiveConfigOfRevision();
    const bootstrap: DynamicConfig = { ttl: 30 };
    const first = effective({ value: { ttl: 20 }, modRevision: '5' }, bootstrap);
    expect(first.config.ttl).toBe(20);
    // The same revision is the same value: the HA cycle's next read gets the same object back.
    expect(effective({ value: { ttl: 20 }, modRevision: '5' }, bootstrap)).toBe(first);
    expect(effective({ value: { ttl: 25 }, modRevision: '6' }, bootstrap).config.ttl).toBe(25);
    expect(effective(null, bootstrap).config.ttl).toBe(30);
    expect(effective(null, { ttl: 40 }).config.ttl).toBe(40);
  });
});

describe('validateDynamicConfigKeys', () => {
  it('accepts a valid document, unknown keys and PATCH deletions (null)', () => {
    const doc = {
      ttl: 20,
      loop_wait: 5,
      retry_timeout: 5,
      synchronous_mode: 'quorum',
      failsafe_mode: 'on',
      my_extension: { anything: [1, 2] },
      check_timeline: null,
      postgresql: { use_pg_rewind: false, parameters: { max_connections: 100, work_mem: null } },
    };
    expect(validateDynamicConfigKeys(doc)).toEqual([]);
  });

  it.each<[unknown, string[]]>([
    [[1], ['configuration: must be a mapping (JSON object), got [1]']],
    [{ ttl: 'abc' }, ['ttl: must be an integer from 5 to 86400, got "abc"']],
    [{ ttl: '30' }, ['ttl: must be an integer from 5 to 86400, got "30"']],
    [{ loop_wait: 0 }, ['loop_wait: must be an integer from 1 to 86400, got 0']],
    [{ retry_timeout: true }, ['retry_timeout: must be an integer from 1 to 86400, got true']],
    [
      { maximum_lag_on_failover: -1 },
      ['maximum_lag_on_failover: must be an integer from 0 to 9007199254740991, got -1'],
    ],
    [
      { maximum_lag_on_syncnode: -2 },
      ['maximum_lag_on_syncnode: must be an integer from -1 to 9007199254740991, got -2'],
    ],
    [{ primary_start_timeout: 'soon' }, ['primary_start_timeout: must be an integer from 0 to 86400, got "soon"']],
    [{ synchronous_node_count: 0 }, ['synchronous_node_count: must be an integer from 1 to 255, got 0']],
    [{ pause: 'maybe' }, ['pause: must be a boolean (true/false, on/off, yes/no), got "maybe"']],
    [
      { synchronous_mode: 'all' },
      ['synchronous_mode: must be a boolean (true/false, on/off, yes/no) or "quorum", got "all"'],
    ],
    [{ postgresql: 'x' }, ['postgresql: must be a mapping, got "x"']],
    [{ postgresql: { use_slots: 2 } }, ['postgresql.use_slots: must be a boolean (true/false, on/off, yes/no), got 2']],
    [{ postgresql: { parameters: [] } }, ['postgresql.parameters: must be a mapping, got []']],
    [
      { postgresql: { parameters: { a: [1] } } },
      ['postgresql.parameters.a: must be a string, number or boolean, got [1]'],
    ],
    [
      { ttl: 'x', loop_wait: 'y' },
      ['ttl: must be an integer from 5 to 86400, got "x"', 'loop_wait: must be an integer from 1 to 86400, got "y"'],
    ],
  ])('rejects %j', (doc, expected) => {
    expect(validateDynamicConfigKeys(doc)).toEqual(expected);
  });
});
