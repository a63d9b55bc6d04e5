import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { PostgresqlConfig } from '../../../src/config/config.types';
import { CommandRunner } from '../../../src/postgresql/process/commands';
import { ConfigurationFiles } from '../../../src/postgresql/process/configuration-files';
import { LocalPostgres } from '../../../src/postgresql/process/local-postgres';
import { passwordEnvironment, withPassfile, writePassfile } from '../../../src/postgresql/process/passfile';
import { removeDir, tmpDir } from '../../helpers/tmp';

/** `postgresql.pgpass`, as Patroni uses it: the one file every PostgreSQL tool of the agent reads its password from. */
describe('postgresql.pgpass', () => {
  const dir = tmpDir('stator-passfile-spec-');
  afterAll(() => removeDir(dir));
  const postgresql = (pgpass?: string): PostgresqlConfig =>
    ({
      listen: '127.0.0.1:5432',
      connect_address: '127.0.0.1:5432',
      data_dir: join(dir, 'data'),
      bin_dir: '/usr/lib/postgresql/15/bin',
      authentication: {
        superuser: { username: 'postgres', password: 'su:pw' },
        replication: { username: 'replicator', password: 'rep\\pw' },
        rewind: { username: 'rewind_user', password: 'rw' },
      },
      parameters: {},
      pg_hba: [],
      // An OS user that is the agent's own: no chown when the tests do not run as root.
      os_user: process.getuid?.() === 0 ? 'root' : (process.env.USER ?? 'root'),
      callbacks: {},
      ...(pgpass ? { pgpass } : {}),
    }) as unknown as PostgresqlConfig;
  const local = (pgpass?: string) => new LocalPostgres({ name: 'n1', config: postgresql(pgpass) });
  const commands = (pgpass?: string) => new CommandRunner(postgresql(pgpass));

  it('holds a line for every login the agent uses, the one asked for first, escaped, mode 0600', async () => {
    const pgpass = join(dir, 'pgpass');
    expect(await writePassfile(local(pgpass), commands(pgpass), 'replicator', 'rep\\pw')).toBe(pgpass);
    expect(readFileSync(pgpass, 'utf8')).toBe(
      '*:*:*:replicator:rep\\\\pw\n*:*:*:postgres:su\\:pw\n*:*:*:rewind_user:rw\n',
    );
    expect(statSync(pgpass).mode & 0o777).toBe(0o600);
  });

  it('gives pg_basebackup and pg_rewind PGPASSFILE when configured, PGPASSWORD otherwise', async () => {
    const pgpass = join(dir, 'pgpass-env');
    expect(await passwordEnvironment(local(pgpass), commands(pgpass), 'rewind_user', 'rw')).toEqual({
      PGPASSFILE: pgpass,
    });
    expect(await passwordEnvironment(local(), commands(), 'rewind_user', 'rw')).toEqual({ PGPASSWORD: 'rw' });
  });

  it('without it, a script gets a private temporary file with its one login, removed once the script ends', async () => {
    let seen = '';
    const content = await withPassfile(
      local(),
      commands(),
      { user: 'postgres', password: 'su:pw' },
      async (passfile) => {
        seen = passfile;
        return readFileSync(passfile, 'utf8');
      },
    );
    expect(content).toBe('*:*:*:postgres:su\\:pw\n');
    expect(basename(dirname(seen))).toMatch(/^stator-pgpass-/);
    expect(existsSync(dirname(seen))).toBe(false);
    await expect(
      withPassfile(local(), commands(), { user: 'postgres', password: 'x' }, async (passfile) => {
        seen = passfile;
        throw new Error('script failed');
      }),
    ).rejects.toThrow('script failed');
    expect(existsSync(dirname(seen))).toBe(false);
  });

  it('with it, a script reads that file, which stays', async () => {
    const pgpass = join(dir, 'pgpass-script');
    const used = await withPassfile(
      local(pgpass),
      commands(pgpass),
      { user: 'postgres', password: 'pw' },
      async (p) => p,
    );
    expect(used).toBe(pgpass);
    expect(readFileSync(pgpass, 'utf8')).toContain('*:*:*:postgres:pw\n');
  });

  it('primary_conninfo names the passfile (as Patroni writes it) instead of carrying the password', async () => {
    const pgpass = join(dir, 'pgpass-conninfo');
    const settings = {
      role: 'replica' as const,
      upstream: { name: 'n2', host: '127.0.0.1', port: 5433 },
      parameters: {},
    };
    const withFile = new ConfigurationFiles(local(pgpass), commands(pgpass));
    const render = (files: ConfigurationFiles) =>
      (files as unknown as { renderPostgresqlConf(s: unknown): string }).renderPostgresqlConf(settings);
    const conninfo = (text: string) => text.split('\n').find((line) => line.startsWith('primary_conninfo')) ?? '';
    expect(conninfo(render(withFile))).toContain(`passfile=${pgpass}`);
    expect(conninfo(render(withFile))).not.toContain('password');
    expect(conninfo(render(new ConfigurationFiles(local(), commands())))).toContain('password=');
  });
});
