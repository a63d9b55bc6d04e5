import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresqlConfig } from '../../../src/config/config.types';
import { PostgresSettings } from '../../../src/postgresql/postgres.port';
import { CommandRunner } from '../../../src/postgresql/process/commands';
import { ConfigurationFiles } from '../../../src/postgresql/process/configuration-files';
import { LocalPostgres } from '../../../src/postgresql/process/local-postgres';

/** The files PostgreSQL reads, as Stator writes them from config_dir, custom_conf, pg_hba, pg_ident and recovery_conf. */
describe('ConfigurationFiles', () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'stator-conffiles-spec-'));
    mkdirSync(join(dir, 'data'));
    writeFileSync(join(dir, 'data', 'postgresql.conf'), "# initdb's file\nshared_buffers = 128MB\n");
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function files(overrides: Partial<PostgresqlConfig> = {}): {
    write: (settings: PostgresSettings) => Promise<void>;
    local: LocalPostgres;
  } {
    const config = {
      listen: '127.0.0.1:5432',
      connect_address: '127.0.0.1:5432',
      data_dir: join(dir, 'data'),
      bin_dir: '/usr/lib/postgresql/15/bin',
      authentication: {
        superuser: { username: 'postgres', password: 'p' },
        replication: { username: 'replicator', password: 'r' },
      },
      parameters: {},
      pg_hba: [],
      // An OS user that is the agent's own: no chown when the tests do not run as root.
      os_user: process.getuid?.() === 0 ? 'root' : (process.env.USER ?? 'root'),
      ...overrides,
    } as PostgresqlConfig;
    const local = new LocalPostgres({ name: 'n1', config });
    const configurationFiles = new ConfigurationFiles(local, new CommandRunner(config));
    return { write: (settings) => configurationFiles.write(settings), local };
  }
  const read = (...path: string[]) => readFileSync(join(dir, ...path), 'utf8');
  const upstream = { name: 'n0', host: '10.0.0.1', port: 5432 };

  it('writes postgresql.conf, pg_hba.conf and pg_ident.conf in config_dir, with initdb’s file copied as the base', async () => {
    const { write, local } = files({
      config_dir: join(dir, 'etc', 'postgresql', '15', 'main'),
      pg_ident: ['omicron bryanh bryan'],
    });
    await write({ role: 'primary', parameters: {} });
    const etc = ['etc', 'postgresql', '15', 'main'];
    expect(local.configFile).toBe(join(dir, ...etc, 'postgresql.conf'));
    const conf = read(...etc, 'postgresql.conf');
    expect(conf).toContain("include_if_exists 'postgresql.base.conf'");
    expect(conf).toContain(`hba_file = '${join(dir, ...etc, 'pg_hba.conf')}'`);
    expect(conf).toContain(`ident_file = '${join(dir, ...etc, 'pg_ident.conf')}'`);
    expect(read(...etc, 'postgresql.base.conf')).toBe("# initdb's file\nshared_buffers = 128MB\n");
    expect(read(...etc, 'pg_ident.conf')).toMatch(/\nomicron bryanh bryan\n$/);
    expect(existsSync(join(dir, 'data', 'pg_hba.conf'))).toBe(false);
  });

  it('renames a postgresql.conf found in config_dir (a Debian cluster’s) to the base file, once', async () => {
    const etc = join(dir, 'etc');
    mkdirSync(etc);
    writeFileSync(join(etc, 'postgresql.conf'), "# Debian's file\n");
    const { write } = files({ config_dir: etc });
    await write({ role: 'primary', parameters: {} });
    await write({ role: 'primary', parameters: {} });
    expect(read('etc', 'postgresql.base.conf')).toBe("# Debian's file\n");
  });

  it('with a separate config_dir, takes the data directory’s base file (a base backup’s) before its postgresql.conf', async () => {
    writeFileSync(join(dir, 'data', 'postgresql.conf'), '# Written by Stator: a copy from the primary\n');
    writeFileSync(join(dir, 'data', 'postgresql.base.conf'), "# the primary's base\n");
    await files({ config_dir: join(dir, 'etc') }).write({ role: 'replica', upstream, parameters: {} });
    expect(read('etc', 'postgresql.base.conf')).toBe("# the primary's base\n");
  });

  it('includes custom_conf instead of a base file and leaves initdb’s file alone', async () => {
    const { write } = files({ custom_conf: '/etc/site/custom.conf' });
    await write({ role: 'primary', parameters: {} });
    expect(read('data', 'postgresql.conf')).toMatch(/\ninclude '\/etc\/site\/custom\.conf'\n/);
    expect(existsSync(join(dir, 'data', 'postgresql.base.conf'))).toBe(false);
  });

  it('writes a replica’s recovery_conf, under the parameters, without what Stator decides', async () => {
    const { write } = files({
      recovery_conf: { restore_command: 'cp /a/%f %p', recovery_min_apply_delay: '5min', recovery_target_time: 'x' },
    });
    await write({ role: 'replica', upstream, parameters: { recovery_min_apply_delay: '1min' } });
    const conf = read('data', 'postgresql.conf');
    expect(conf).toContain("restore_command = 'cp /a/%f %p'");
    expect(conf).toContain("recovery_min_apply_delay = '1min'");
    expect(conf).toContain("recovery_target_time = ''");
    // The settings from /config replace the local ones when given (the HA node chose them); a primary has none.
    await write({ role: 'replica', upstream, parameters: {}, recoveryConf: { archive_cleanup_command: 'true' } });
    expect(read('data', 'postgresql.conf')).toContain("archive_cleanup_command = 'true'");
    expect(read('data', 'postgresql.conf')).not.toContain('restore_command');
    await write({ role: 'primary', parameters: {} });
    expect(read('data', 'postgresql.conf')).not.toMatch(/restore_command|recovery_min_apply_delay/);
  });

  it('writes pg_hba from the settings, else the local lines, else the defaults followed by bootstrap.pg_hba', async () => {
    await files().write({ role: 'primary', parameters: {}, bootstrapHba: ['host all all 10.0.0.0/8 md5'] });
    expect(read('data', 'pg_hba.conf').trim().split('\n').slice(1)).toEqual([
      'local all all trust',
      'local replication all trust',
      'host all all all scram-sha-256',
      'host replication replicator all scram-sha-256',
      'host all all 10.0.0.0/8 md5',
    ]);
    await files({ pg_hba: ['local all all peer'] }).write({ role: 'primary', parameters: {} });
    expect(read('data', 'pg_hba.conf').trim().split('\n').slice(1)).toEqual(['local all all peer']);
    await files({ pg_hba: ['local all all peer'] }).write({
      role: 'primary',
      parameters: {},
      pgHba: ['local all all md5'],
    });
    expect(read('data', 'pg_hba.conf').trim().split('\n').slice(1)).toEqual(['local all all md5']);
  });

  it('leaves pg_ident.conf to the user who names an ident_file, and an existing one alone without lines', async () => {
    await files({ parameters: { ident_file: 'my_ident.conf' }, pg_ident: ['m a b'] }).write({
      role: 'primary',
      parameters: {},
    });
    expect(read('data', 'postgresql.conf')).toContain(`ident_file = '${join(dir, 'data', 'my_ident.conf')}'`);
    expect(existsSync(join(dir, 'data', 'pg_ident.conf'))).toBe(false);
    writeFileSync(join(dir, 'data', 'pg_ident.conf'), 'kept a b\n');
    await files().write({ role: 'primary', parameters: {} });
    expect(read('data', 'pg_ident.conf')).toBe('kept a b\n');
  });

  it('removes the recovery settings a restore left in postgresql.auto.conf, unless a custom bootstrap keeps them', async () => {
    // What `pgbackrest restore` writes: it would override the restore_command and upstream Stator writes.
    const restored =
      "# Do not edit this file manually!\nwork_mem = '8MB'\n\n# Recovery settings generated by pgBackRest restore\nrestore_command = 'pgbackrest --stanza=main archive-get %f \"%p\"'\n";
    writeFileSync(join(dir, 'data', 'postgresql.auto.conf'), restored);
    const { write } = files();
    await write({ role: 'primary', parameters: {}, keepExistingRecoveryConf: true });
    expect(read('data', 'postgresql.auto.conf')).toBe(restored);
    await write({ role: 'replica', upstream, parameters: {} });
    expect(read('data', 'postgresql.auto.conf')).toBe(
      "# Do not edit this file manually!\nwork_mem = '8MB'\n\n# Recovery settings generated by pgBackRest restore\n",
    );
  });
});
