import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { chown, mkdir, writeFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { PgQuery } from '../../src/postgresql/pg-query';
import { RealPostgresProcess } from '../../src/postgresql/real-postgres-process';
import { freePort } from '../helpers/ports';
import {
  cleanupPgRoot,
  makePgTempRoot,
  PG_BIN_DIR,
  PG_OS_USER,
  PgTestNode,
  pgTestNode,
  TEST_REPLICATION_USER,
} from '../helpers/postgres';
import { waitFor } from '../helpers/wait-for';

const START_TIMEOUT_MS = 20_000;

/**
 * postgresql.config_dir (a Debian-style /etc directory), custom_conf, pg_ident, pg_hba and a replica's
 * recovery_conf, as PostgreSQL itself reports them.
 */
describe('configuration files outside the data directory', () => {
  let root: string;
  let primary: PgTestNode;
  let replica: PgTestNode;
  let pgPrimary: RealPostgresProcess;
  let pgReplica: RealPostgresProcess;
  const queries: PgQuery[] = [];
  const osUser = userInfo().username;
  const hba = [
    'local all postgres peer map=stator_test',
    'local all all trust',
    'local replication all trust',
    'host all all all scram-sha-256',
    `host replication ${TEST_REPLICATION_USER.username} all scram-sha-256`,
  ];

  function sql(node: PgTestNode): PgQuery {
    const query = PgQuery.fromConfig(node.config);
    queries.push(query);
    return query;
  }

  async function show(node: PgTestNode, name: string): Promise<string> {
    const rows = await sql(node).query<{ value: string }>(`SELECT current_setting('${name}') AS value`);
    return rows[0].value;
  }

  beforeAll(async () => {
    root = await makePgTempRoot();
    const socketDir = join(root, 'sockets');
    await mkdir(socketDir);
    await chown(socketDir, statSync(root).uid, statSync(root).gid);
    const parameters = { unix_socket_directories: socketDir };
    primary = pgTestNode(root, 'primary', await freePort(), parameters);
    replica = pgTestNode(root, 'replica', await freePort(), parameters);
    const customConf = join(root, 'primary', 'custom.conf');
    await mkdir(join(root, 'primary'), { recursive: true });
    await writeFile(customConf, "work_mem = '7MB'\n", { mode: 0o644 });
    primary.config = {
      ...primary.config,
      config_dir: join(root, 'primary', 'etc', 'postgresql', '15', 'main'),
      custom_conf: customConf,
      pg_hba: hba,
      pg_ident: [`stator_test ${osUser} postgres`],
    };
    replica.config = {
      ...replica.config,
      config_dir: join(root, 'replica', 'etc', 'postgresql', '15', 'main'),
      recovery_conf: { restore_command: 'false', recovery_min_apply_delay: '2s', recovery_target_time: 'ignored' },
    };
    pgPrimary = new RealPostgresProcess({ name: primary.name, config: primary.config, stateDir: primary.stateDir });
    pgReplica = new RealPostgresProcess({ name: replica.name, config: replica.config, stateDir: replica.stateDir });
  });

  afterAll(async () => {
    await Promise.all(queries.map((query) => query.close()));
    await Promise.all([pgPrimary?.detach(), pgReplica?.detach()]);
    if (root) await cleanupPgRoot(root);
  });

  it('a primary reads postgresql.conf, pg_hba.conf and pg_ident.conf from config_dir and includes custom_conf', async () => {
    await pgPrimary.initdb();
    await pgPrimary.configure({ role: 'primary', parameters: {} });
    await pgPrimary.start(START_TIMEOUT_MS);
    await pgPrimary.postBootstrap();

    const configDir = primary.config.config_dir!;
    expect(await show(primary, 'config_file')).toBe(join(configDir, 'postgresql.conf'));
    expect(await show(primary, 'hba_file')).toBe(join(configDir, 'pg_hba.conf'));
    expect(await show(primary, 'ident_file')).toBe(join(configDir, 'pg_ident.conf'));
    expect(await show(primary, 'data_directory')).toBe(primary.dataDir);
    expect(await show(primary, 'work_mem')).toBe('7MB');
    // custom_conf replaces postgresql.base.conf: initdb's file stays where it was, untouched.
    expect(existsSync(join(configDir, 'postgresql.base.conf'))).toBe(false);
    expect(readFileSync(join(primary.dataDir, 'postgresql.conf'), 'utf8')).toMatch(
      /^# -+\n# PostgreSQL configuration file/,
    );
    for (const file of ['postgresql.conf', 'pg_hba.conf', 'pg_ident.conf']) {
      expect(statSync(join(configDir, file)).uid).toBe(Number(execFileSync('id', ['-u', PG_OS_USER]).toString()));
    }

    const mappings = await sql(primary).query(
      'SELECT map_name, sys_name, pg_username, error FROM pg_ident_file_mappings',
    );
    expect(mappings).toEqual([{ map_name: 'stator_test', sys_name: osUser, pg_username: 'postgres', error: null }]);
    // The map at work: this OS user logs in as postgres by peer authentication, which the map alone allows.
    const socketDir = String(primary.config.parameters.unix_socket_directories);
    const psql = [
      '-h',
      socketDir,
      '-p',
      String(primary.port),
      '-U',
      'postgres',
      '-d',
      'postgres',
      '-Atc',
      'SELECT current_user',
    ];
    expect(
      execFileSync(join(PG_BIN_DIR, 'psql'), psql, { env: { PATH: process.env.PATH } })
        .toString()
        .trim(),
    ).toBe('postgres');
  }, 40_000);

  it('a pg_hba from the dynamic configuration replaces the file on reload', async () => {
    const lines = [...hba, 'host sameuser all 192.0.2.0/24 scram-sha-256'];
    await pgPrimary.configure({
      role: 'primary',
      parameters: {},
      pgHba: lines,
      pgIdent: ['stator_test someone postgres'],
    });
    await pgPrimary.reload();
    const rules = await waitFor(
      async () => {
        const rows = await sql(primary).query<{ address: string | null }>(
          'SELECT address FROM pg_hba_file_rules WHERE address IS NOT NULL',
        );
        return rows.some((row) => row.address === '192.0.2.0') ? rows : null;
      },
      { timeoutMs: 10_000, description: 'the new pg_hba line in pg_hba_file_rules' },
    );
    expect(rules.map((row) => row.address)).toContain('192.0.2.0');
    const mappings = await sql(primary).query<{ sys_name: string }>('SELECT sys_name FROM pg_ident_file_mappings');
    expect(mappings).toEqual([{ sys_name: 'someone' }]);
  }, 20_000);

  it('a replica runs with recovery_conf, and a postgresql.base.conf copied from initdb’s file', async () => {
    const upstream = { name: primary.name, host: '127.0.0.1', port: primary.port };
    await pgReplica.basebackup(upstream);
    await pgReplica.configure({ role: 'replica', upstream, parameters: {} });
    await pgReplica.start(START_TIMEOUT_MS);

    const configDir = replica.config.config_dir!;
    expect(await show(replica, 'config_file')).toBe(join(configDir, 'postgresql.conf'));
    expect(readFileSync(join(configDir, 'postgresql.base.conf'), 'utf8')).toMatch(
      /^# -+\n# PostgreSQL configuration file/,
    );
    expect(await show(replica, 'restore_command')).toBe('false');
    expect(await show(replica, 'recovery_min_apply_delay')).toBe('2s');
    // A recovery target would stop the replica: Stator decides it, as Patroni does.
    expect(await show(replica, 'recovery_target_time')).toBe('');
    const receiving = await waitFor(
      async () =>
        (await sql(replica).query<{ status: string }>('SELECT status FROM pg_stat_wal_receiver'))[0]?.status ===
        'streaming',
      { timeoutMs: 15_000, description: 'the replica streaming from the primary' },
    );
    expect(receiving).toBe(true);
  }, 40_000);
});
