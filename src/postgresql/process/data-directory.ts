import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from 'pg';
import { toClientConfig } from '../local-connection';
import { splitCommandLine } from '../../common/command-line';
import { DataDirInfo, PostgresCommandError, UpstreamNode } from '../postgres.port';
import { CommandRunner, tail } from './commands';
import { ControlDataReader } from './control-data';
import { formatConninfo } from './configuration-files';
import { LocalPostgres } from './local-postgres';
import { removeLinkedDirectories } from './linked-directories';
import { livePostmasterFromPidFile, sleep } from './os-process';
import { passwordEnvironment, withPassfile } from './passfile';
import { errorText } from '../../common/error-text';
import { basebackupOptions, formatInitdbOptions, InitdbOptions, parseControlData } from './tool-arguments';

/**
 * What happens to the data directory while no postmaster runs on it: reading pg_control, creating a
 * cluster (initdb, a custom bootstrap, a clone), rewinding it, recovering it after a crash, removing it.
 * The data directory and everything in it belong to the OS user, mode 0700.
 */
export class DataDirectory {
  constructor(
    private readonly local: LocalPostgres,
    private readonly commands: CommandRunner,
    private readonly initdbOptions: InitdbOptions = [],
    private readonly postBootstrapCommand?: string,
    private readonly controlData = new ControlDataReader(local, commands),
  ) {}

  private get path(): string {
    return this.local.dataDir;
  }

  /**
   * Reads the data directory and pg_control without a running server. Like Patroni, a directory holding
   * only dot files or `lost+found` is `empty`; a directory with other content is `initialized`, and
   * carries pg_control's fields only when it has `PG_VERSION` and `global/pg_control` (a leftover that is
   * not a cluster is reported without `systemIdentifier`, and starting it fails; nothing here deletes it).
   */
  async inspect(): Promise<DataDirInfo> {
    let entries: string[];
    try {
      entries = await readdir(this.path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { state: 'missing', standbySignal: false };
      throw error;
    }
    const standbySignal = entries.includes('standby.signal');
    if (entries.every((entry) => entry.startsWith('.') || entry === 'lost+found'))
      return { state: 'empty', standbySignal };
    if (!entries.includes('PG_VERSION') || !existsSync(join(this.path, 'global', 'pg_control'))) {
      return { state: 'initialized', standbySignal };
    }
    return { state: 'initialized', standbySignal, ...parseControlData(await this.controlData.read()) };
  }

  /**
   * initdb with `--auth-local=trust --auth-host=scram-sha-256`, `-U <superuser>` and the superuser's
   * password from a temporary pwfile (removed afterwards). The replication role comes with `postBootstrap`.
   */
  async initdb(): Promise<void> {
    await this.ensureExists();
    const pwDir = await mkdtemp(join(tmpdir(), 'stator-initdb-'));
    const pwFile = join(pwDir, 'pwfile');
    try {
      const args = ['-D', this.path, '-U', this.local.superuser, '--auth-local=trust', '--auth-host=scram-sha-256'];
      if (this.local.superuserPassword !== undefined) {
        await this.commands.writeOwnedFile(pwFile, `${this.local.superuserPassword}\n`);
        await this.commands.chownToOsUser(pwDir);
        args.push(`--pwfile=${pwFile}`);
      }
      args.push(...formatInitdbOptions(this.initdbOptions));
      await this.commands.run(this.local.binary('initdb'), args, { timeoutMs: this.commands.deadline('initdb') });
    } finally {
      await rm(pwDir, { recursive: true, force: true });
    }
  }

  /**
   * After initdb or a custom bootstrap: the superuser's password, the replication role (REPLICATION LOGIN), the `rewind` role when configured (LOGIN and
   * EXECUTE on the four functions pg_rewind calls, as the reference grants them), then the
   * `post_bootstrap` script. Statements are built by the server (`format` with %I/%L) and not logged
   * (log_statement off for the session), since they carry passwords.
   */
  async postBootstrap(): Promise<void> {
    const { superuser, superuserPassword, replicationUser, replicationPassword } = this.local;
    const rewind = this.local.config.authentication.rewind;
    await this.asSuperuser('post-bootstrap (roles)', async (client) => {
      // A custom bootstrap (a clone, a restored backup) brings the source's roles: the configured superuser's
      // password is set, as the reference does, or no one could log in with it over TCP.
      if (superuserPassword !== undefined) await createRole(client, superuser, superuserPassword, 'SUPERUSER LOGIN');
      if (replicationUser !== superuser)
        await createRole(client, replicationUser, replicationPassword, 'REPLICATION LOGIN');
      if (rewind && rewind.username !== superuser) {
        await createRole(client, rewind.username, rewind.password, 'LOGIN');
        for (const fn of REWIND_FUNCTIONS)
          await client.query(`GRANT EXECUTE ON FUNCTION ${fn} TO ${await quoteIdent(client, rewind.username)}`);
      }
    });
    if (this.postBootstrapCommand) await this.runPostBootstrapScript(this.postBootstrapCommand);
  }

  private async asSuperuser(what: string, work: (client: Client) => Promise<void>): Promise<void> {
    const client = new Client({
      ...toClientConfig(this.local.localConnection()),
      connectionTimeoutMillis: 5000,
      query_timeout: 10_000,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query("SET log_statement = 'none'; SET log_min_duration_statement = -1");
      await work(client);
    } catch (error) {
      throw new PostgresCommandError(what, null, errorText(error));
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /**
   * `bootstrap.post_bootstrap`, as the reference runs it: split as a shell would, the superuser's
   * conninfo appended, its password in a passfile (PGPASSFILE: `postgresql.pgpass`, or a temporary
   * one) rather than on the command line. A failure fails the bootstrap.
   */
  private async runPostBootstrapScript(command: string): Promise<void> {
    const words = splitCommandLine(command);
    if (!words || words.length === 0)
      throw new PostgresCommandError(
        'post_bootstrap',
        null,
        `cannot split ${JSON.stringify(command)} into a command line`,
      );
    const connection = this.local.localConnection();
    const conninfo = formatConninfo({
      dbname: 'postgres',
      user: connection.user,
      host: connection.host,
      port: connection.port,
      ...(connection.host.startsWith('/') ? {} : connection.libpq),
    });
    const [file, ...args] = words;
    const login = { user: connection.user, password: connection.password };
    await withPassfile(this.local, this.commands, login, (passfile) =>
      this.commands.run(file, [...args, conninfo], {
        env: { PGPASSFILE: passfile, PGOPTIONS: '-c synchronous_commit=local -c statement_timeout=0' },
        timeoutMs: this.commands.deadline('dataCopy'),
      }),
    );
  }

  /**
   * pg_basebackup (`-X stream -c fast`) as the replication user into an empty data directory, created
   * with the right owner and mode. On failure the directory's contents are removed again. A data
   * directory that is not empty is refused untouched.
   */
  async basebackup(source: UpstreamNode): Promise<void> {
    const before = await this.inspect();
    if (before.state === 'initialized') {
      throw new PostgresCommandError('pg_basebackup', null, `data directory ${this.path} is not empty`);
    }
    await this.ensureExists();
    // A conninfo rather than -h/-p/-U: it carries the replication role's TLS options too.
    const conninfo = formatConninfo({
      host: source.host,
      port: source.port,
      user: this.local.replicationUser,
      ...this.local.replicationLibpq,
    });
    const args = [
      '-D',
      this.path,
      `--dbname=${conninfo}`,
      '-X',
      'stream',
      '-c',
      'fast',
      '--no-password',
      ...basebackupOptions(this.local.config.basebackup),
    ];
    try {
      await this.commands.run(this.local.binary('pg_basebackup'), args, {
        env: await passwordEnvironment(
          this.local,
          this.commands,
          this.local.replicationUser,
          this.local.replicationPassword,
        ),
        timeoutMs: this.commands.deadline('dataCopy'),
      });
    } catch (error) {
      await this.empty();
      throw error;
    }
  }

  /**
   * pg_rewind against the running `source` as the rewind role, or the superuser (password through
   * PGPASSWORD or `postgresql.pgpass`, never on the command line). pg_rewind overwrites the configuration files with the
   * source's: call `configure` before the next start.
   */
  async rewind(source: UpstreamNode): Promise<'rewound' | 'not_needed'> {
    const role = this.local.rewindRole;
    const conninfo = formatConninfo({
      host: source.host,
      port: source.port,
      user: role.username,
      dbname: 'postgres',
      connect_timeout: 5,
      ...role.libpq,
    });
    const result = await this.commands.run(
      this.local.binary('pg_rewind'),
      ['--target-pgdata', this.path, `--source-server=${conninfo}`],
      {
        env: {
          ...(await passwordEnvironment(this.local, this.commands, role.username, role.password)),
          LC_MESSAGES: 'C',
        },
        allowFailure: true,
        timeoutMs: this.commands.deadline('rewindOrRecovery'),
      },
    );
    const output = `${result.stdout}\n${result.stderr}`;
    if (result.code === 0 && /no rewind required/i.test(output)) return 'not_needed';
    if (result.code !== 0)
      throw new PostgresCommandError('pg_rewind', result.code, tail(result.stderr || result.stdout));
    return 'rewound';
  }

  /**
   * `postgres --single` with stdin at /dev/null: replays WAL and shuts down cleanly. Single-user mode
   * refuses standby mode, so standby.signal is moved aside meanwhile (and put back).
   */
  async crashRecovery(): Promise<void> {
    const running = await livePostmasterFromPidFile(this.path);
    if (running)
      throw new PostgresCommandError(
        'postgres --single',
        null,
        `a postmaster (pid ${running}) still runs on ${this.path}`,
      );
    const signal = join(this.path, 'standby.signal');
    const aside = join(this.path, 'standby.signal.stator-crash-recovery');
    const moved = existsSync(signal);
    if (moved) await rename(signal, aside);
    try {
      const args = ['--single', '-D', this.path, '-c', `config_file=${this.local.configFile}`, 'postgres'];
      for (let attempt = 1; ; attempt++) {
        const result = await this.commands.run(this.local.binary('postgres'), args, {
          env: { LC_MESSAGES: 'C' },
          allowFailure: true,
          timeoutMs: this.commands.deadline('rewindOrRecovery'),
        });
        if (result.code === 0) break;
        // After a SIGKILLed postmaster, its children may hold the shared memory for a moment longer.
        if (attempt < 10 && /pre-existing shared memory block/.test(result.stderr)) {
          await sleep(200);
          continue;
        }
        throw new PostgresCommandError('postgres --single', result.code, tail(result.stderr));
      }
    } finally {
      if (moved) await rename(aside, signal);
    }
    const info = await this.inspect();
    if (info.clusterState !== 'shut down' && info.clusterState !== 'shut down in recovery') {
      throw new PostgresCommandError(
        'postgres --single',
        0,
        `pg_control says "${info.clusterState}" after crash recovery`,
      );
    }
  }

  /** Deletes the data directory, and what its WAL directory and tablespaces link to. Refused while a postmaster runs on it (`trackedPostmaster`, or one named by postmaster.pid). */
  async remove(trackedPostmaster: number | null): Promise<void> {
    const running = trackedPostmaster ?? (await livePostmasterFromPidFile(this.path));
    if (running) throw new Error(`cannot remove ${this.path}: postmaster ${running} is running`);
    await removeLinkedDirectories(this.path);
    await rm(this.path, { recursive: true, force: true });
  }

  /** Creates the data directory's parent when missing; one this creates is owned by the OS user, who may then create the data directory in it. */
  async ensureParentExists(): Promise<void> {
    const parent = dirname(this.path);
    const created = await mkdir(parent, { recursive: true });
    if (created) await this.commands.chownToOsUser(parent);
  }

  /** Creates the data directory when missing (parents with default modes), owned by the OS user, mode 0700. */
  async ensureExists(): Promise<void> {
    await mkdir(dirname(this.path), { recursive: true });
    await mkdir(this.path, { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
    await this.commands.chownToOsUser(this.path);
    await chmod(this.path, 0o700);
  }

  /** Removes everything inside the data directory (and what its WAL directory and tablespaces link to), keeping the directory. */
  async empty(): Promise<void> {
    await removeLinkedDirectories(this.path);
    const entries = await readdir(this.path).catch(() => [] as string[]);
    await Promise.all(entries.map((entry) => rm(join(this.path, entry), { recursive: true, force: true })));
  }
}

/** The functions pg_rewind runs on its source, which a non-superuser rewind role needs EXECUTE on. */
const REWIND_FUNCTIONS = [
  'pg_catalog.pg_ls_dir(text, boolean, boolean)',
  'pg_catalog.pg_stat_file(text, boolean)',
  'pg_catalog.pg_read_binary_file(text)',
  'pg_catalog.pg_read_binary_file(text, bigint, bigint, boolean)',
];

/** CREATE ROLE, or ALTER ROLE when it exists, with `attributes` and the password if any. */
async function createRole(
  client: Client,
  role: string,
  password: string | undefined,
  attributes: string,
): Promise<void> {
  const { rows } = await client.query<{ statement: string }>(
    `SELECT pg_catalog.format(
       CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1) THEN 'ALTER ROLE %I WITH ' ELSE 'CREATE ROLE %I WITH ' END
       || $3::text || CASE WHEN $2::text IS NULL THEN '' ELSE ' PASSWORD %L' END, $1::text, $2::text) AS statement`,
    [role, password ?? null, attributes],
  );
  await client.query(rows[0].statement);
}

async function quoteIdent(client: Client, name: string): Promise<string> {
  const { rows } = await client.query<{ quoted: string }>('SELECT pg_catalog.quote_ident($1) AS quoted', [name]);
  return rows[0].quoted;
}
