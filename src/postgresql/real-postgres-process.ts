import { spawn } from 'node:child_process';
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { descendantsOf, isRunningProcess } from '../common/process-tree';
import { chmod, chown, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { Client } from 'pg';
import { Observable, Subject } from 'rxjs';
import { PostgresqlConfig } from '../config/config.types';
import { parseLsn } from '../common/lsn';
import { FenceConnection } from './fence/fence-client';
import { FenceLaunchOptions, fencePaths, PostmasterExitEvent, STOP_SIGNALS } from './fence/fence-protocol';
import { withVersionNames } from './parameter-renames';
import { localConnection, LocalConnection, serverAcceptsConnections } from './pg-query';
import {
  DataDirInfo,
  PostgresCommandError,
  PostgresProcess,
  PostgresSettings,
  PostmasterExit,
  StopMode,
  UpstreamNode,
} from './postgres.port';

export interface RealPostgresProcessOptions {
  /** This member's name: `application_name` in `primary_conninfo`, so the upstream's pg_stat_replication shows it. */
  name: string;
  config: PostgresqlConfig;
  /** Node-local state: fence socket, fence pid, postmaster log, last exit record. */
  stateDir: string;
  /** Default: `config.authentication.superuser.password`. */
  superuserPassword?: string;
  /** Default: `config.authentication.replication.username`. */
  replicationUser?: string;
  /** Default: `config.authentication.replication.password`. */
  replicationPassword?: string;
  /** The compiled fence program. Default: `fence/fence-main.js` next to this module, or in `dist/` when running from sources. */
  fenceScript?: string;
  /** Extra initdb options in Patroni's `bootstrap.initdb` form: `'data-checksums'` or `{encoding: 'UTF8'}`. */
  initdbOptions?: Array<string | Record<string, string>>;
  /** Diagnostics (fence lost, escalations). Default: silent. */
  log?: (level: 'info' | 'warning', message: string) => void;
  /** Shorter command deadlines than COMMAND_DEADLINES_MS (tests). */
  commandDeadlinesMs?: Partial<Record<keyof typeof COMMAND_DEADLINES_MS, number>>;
}

interface OsUser {
  uid: number;
  gid: number;
  home: string;
}

interface CommandOptions {
  env?: Record<string, string>;
  /** Text for stdin; without it stdin is /dev/null. */
  input?: string;
  cwd?: string;
  /** Return the result instead of throwing on a non-zero exit. */
  allowFailure?: boolean;
  /** Run as the invoking user even when root (e.g. `id`, `getent`). */
  asAgentUser?: boolean;
  /** Past this the command is killed (SIGTERM, SIGKILL 5 s later) and fails. Default COMMAND_DEADLINES_MS.short. */
  timeoutMs?: number;
}

/**
 * Deadlines of the binaries the adapter runs. A clone or a restored backup takes as long as the data
 * is large, so their deadline only catches a command that hangs for good; the others are bounded by
 * what they do.
 */
const COMMAND_DEADLINES_MS = Object.freeze({
  short: 30_000, // pg_controldata, pg_ctl promote, getent
  initdb: 10 * 60_000,
  rewindOrRecovery: 60 * 60_000, // pg_rewind, single-user crash recovery
  dataCopy: 24 * 60 * 60_000, // pg_basebackup, a custom bootstrap script
});
/** Between SIGTERM and SIGKILL of a command past its deadline. */
const COMMAND_KILL_GRACE_MS = 5_000;

interface CommandResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Marks the postgresql.conf Stator writes, so a later configure knows initdb's own file is already moved aside. */
const STATOR_CONF_MARKER = '# Written by Stator';
/** Where pg_rewind and pg_basebackup keep their output tail in errors. */
const STDERR_TAIL_CHARS = 2000;
/** After the escalation to an immediate shutdown, how long before SIGKILL. */
const IMMEDIATE_GRACE_MS = 2000;
/** How often a promotion is checked: it usually completes within tens of milliseconds. */
const PROMOTE_POLL_MS = 10;
const READY_POLL_MS = 50;
/** How long SIGKILLed processes may take to go (a process in uninterruptible I/O outlives it). */
const KILL_TREE_TIMEOUT_MS = 5000;
/** When the fence vanishes, how long its postmaster may take to follow before it counts as unfenced. */
const FENCE_LOSS_SETTLE_MS = 200;
/** The longest unix socket path Linux accepts (sun_path is 108 bytes with the terminating NUL). */
const MAX_SOCKET_PATH = 107;

/** Parameters Stator sets unless the configuration says otherwise. */
const DEFAULT_PARAMETERS: Record<string, string | number | boolean> = {
  wal_level: 'replica',
  hot_standby: true,
  wal_log_hints: true,
  max_wal_senders: 10,
  max_replication_slots: 10,
  wal_keep_size: '128MB',
  unix_socket_directories: '/tmp',
};

/** Parameters only Stator decides; values for them in the configuration are ignored. */
const STATOR_OWNED_PARAMETERS = new Set([
  'data_directory',
  'config_file',
  'hba_file',
  'listen_addresses',
  'port',
  'primary_conninfo',
  'primary_slot_name',
  'recovery_target_timeline',
]);

/**
 * The PostgresProcess port over the real binaries. The postmaster runs under a fence (see
 * `fence/fence.ts`): a separate detached process that is its parent, reports its exit at once and
 * enforces the primary's dead man's switch even when this agent is gone.
 *
 * When the agent runs as root, every PostgreSQL binary runs as `config.os_user` (spawn uid/gid), and the
 * data directory and every file written into it belong to that user.
 */
export class RealPostgresProcess implements PostgresProcess {
  private readonly config: PostgresqlConfig;
  private readonly stateDir: string;
  private readonly paths: ReturnType<typeof fencePaths>;
  private readonly fenceScript: string;
  private readonly exitSubject = new Subject<PostmasterExit>();
  private fence: FenceConnection | null = null;
  private pid: number | null = null;
  private osUserLookup: Promise<OsUser | null> | null = null;

  constructor(private readonly options: RealPostgresProcessOptions) {
    this.config = options.config;
    this.stateDir = resolve(options.stateDir);
    this.paths = fencePaths(this.stateDir);
    this.fenceScript = options.fenceScript ?? defaultFenceScript();
    if (this.paths.socket.length > MAX_SOCKET_PATH) {
      throw new Error(`state_dir ${this.stateDir} is too long for a unix socket path (${this.paths.socket.length} > ${MAX_SOCKET_PATH})`);
    }
  }

  private get dataDir(): string {
    return resolve(this.config.data_dir);
  }

  private get superuser(): string {
    return this.config.authentication.superuser.username;
  }

  private get superuserPassword(): string | undefined {
    return this.options.superuserPassword ?? this.config.authentication.superuser.password;
  }

  private get replicationUser(): string {
    return this.options.replicationUser ?? this.config.authentication.replication.username;
  }

  private get replicationPassword(): string | undefined {
    return this.options.replicationPassword ?? this.config.authentication.replication.password;
  }

  private binary(name: string): string {
    return join(this.config.bin_dir, name);
  }

  // ---------------------------------------------------------------- data directory

  /**
   * Reads the data directory and pg_control without a running server. Like Patroni, a directory holding
   * only dot files or `lost+found` is `empty`; a directory with other content is `initialized`, and
   * carries pg_control's fields only when it has `PG_VERSION` and `global/pg_control` (a leftover that is
   * not a cluster is reported without `systemIdentifier`, and starting it fails; nothing here deletes it).
   */
  async inspectDataDir(): Promise<DataDirInfo> {
    let entries: string[];
    try {
      entries = await readdir(this.dataDir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { state: 'missing', standbySignal: false };
      throw error;
    }
    const standbySignal = entries.includes('standby.signal');
    if (entries.every((entry) => entry.startsWith('.') || entry === 'lost+found')) return { state: 'empty', standbySignal };
    if (!entries.includes('PG_VERSION') || !existsSync(join(this.dataDir, 'global', 'pg_control'))) {
      return { state: 'initialized', standbySignal };
    }
    const { stdout } = await this.run(this.binary('pg_controldata'), ['-D', this.dataDir], { env: { LC_ALL: 'C' } });
    return { state: 'initialized', standbySignal, ...parseControlData(stdout) };
  }

  /**
   * initdb with `--auth-local=trust --auth-host=scram-sha-256`, `-U <superuser>` and the superuser's
   * password from a temporary pwfile (removed afterwards). The replication role comes with `postBootstrap`.
   */
  async initdb(): Promise<void> {
    await this.ensureDataDir();
    const pwDir = await mkdtemp(join(tmpdir(), 'stator-initdb-'));
    const pwFile = join(pwDir, 'pwfile');
    try {
      const args = ['-D', this.dataDir, '-U', this.superuser, '--auth-local=trust', '--auth-host=scram-sha-256'];
      if (this.superuserPassword !== undefined) {
        await this.writeOwnedFile(pwFile, `${this.superuserPassword}\n`);
        await this.chownToOsUser(pwDir);
        args.push(`--pwfile=${pwFile}`);
      }
      args.push(...formatInitdbOptions(this.options.initdbOptions ?? []));
      await this.run(this.binary('initdb'), args, { timeoutMs: this.deadline('initdb') });
    } finally {
      await rm(pwDir, { recursive: true, force: true });
    }
  }

  /**
   * Runs `command` through /bin/sh as the OS user with PGDATA set; it must fill the data directory with a
   * cluster. The directory is created empty beforehand (owned by the OS user, mode 0700), since the OS user
   * may not be allowed to create it (initdb, pg_basebackup and backup restore tools accept an empty one).
   * The replication role comes with `postBootstrap`, as after initdb.
   */
  async customBootstrap(command: string): Promise<void> {
    await this.ensureDataDir();
    await this.run('/bin/sh', ['-c', command], { env: { PGDATA: this.dataDir }, cwd: this.dataDir, timeoutMs: this.deadline('dataCopy') });
    const info = await this.inspectDataDir();
    if (info.state !== 'initialized' || !info.systemIdentifier) {
      throw new PostgresCommandError('custom bootstrap', 0, `the script did not create a cluster in ${this.dataDir}`);
    }
    await chmod(this.dataDir, 0o700);
  }

  /**
   * Creates the replication role with REPLICATION LOGIN and its password, or brings an existing one to
   * that, over the superuser's connection. The statement is built by the server (`format` with %I/%L) and
   * not logged (log_statement off for the session), since it carries a password.
   */
  async postBootstrap(): Promise<void> {
    const role = this.replicationUser;
    if (role === this.superuser) return;
    const connection = this.localConnection();
    const client = new Client({ ...connection, database: connection.database ?? 'postgres', connectionTimeoutMillis: 5000, query_timeout: 10_000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query("SET log_statement = 'none'; SET log_min_duration_statement = -1");
      const { rows } = await client.query<{ statement: string }>(
        `SELECT pg_catalog.format(
           CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1)
                THEN 'ALTER ROLE %I WITH REPLICATION LOGIN' ELSE 'CREATE ROLE %I WITH REPLICATION LOGIN' END
           || CASE WHEN $2::text IS NULL THEN '' ELSE ' PASSWORD %L' END, $1::text, $2::text) AS statement`,
        [role, this.replicationPassword ?? null],
      );
      await client.query(rows[0].statement);
    } catch (error) {
      throw new PostgresCommandError('post-bootstrap (replication role)', null, error instanceof Error ? error.message : String(error));
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /**
   * pg_basebackup (`-X stream -c fast`) as the replication user into an empty data directory, created
   * with the right owner and mode. On failure the directory's contents are removed again. A data
   * directory that is not empty is refused untouched.
   */
  async basebackup(source: UpstreamNode): Promise<void> {
    const before = await this.inspectDataDir();
    if (before.state === 'initialized') {
      throw new PostgresCommandError('pg_basebackup', null, `data directory ${this.dataDir} is not empty`);
    }
    await this.ensureDataDir();
    const args = ['-D', this.dataDir, '-h', source.host, '-p', String(source.port), '-U', this.replicationUser];
    args.push('-X', 'stream', '-c', 'fast', '--no-password');
    try {
      await this.run(this.binary('pg_basebackup'), args, { env: passwordEnv(this.replicationPassword), timeoutMs: this.deadline('dataCopy') });
    } catch (error) {
      await this.emptyDataDir();
      throw error;
    }
  }

  /**
   * pg_rewind against the running `source` as the superuser (password through PGPASSWORD, never on the
   * command line). pg_rewind overwrites the configuration files with the source's: call `configure`
   * before the next start.
   */
  async rewind(source: UpstreamNode): Promise<'rewound' | 'not_needed'> {
    const conninfo = formatConninfo({ host: source.host, port: source.port, user: this.superuser, dbname: 'postgres', connect_timeout: 5 });
    const result = await this.run(
      this.binary('pg_rewind'),
      ['--target-pgdata', this.dataDir, `--source-server=${conninfo}`],
      { env: { ...passwordEnv(this.superuserPassword), LC_MESSAGES: 'C' }, allowFailure: true, timeoutMs: this.deadline('rewindOrRecovery') },
    );
    const output = `${result.stdout}\n${result.stderr}`;
    if (result.code === 0 && /no rewind required/i.test(output)) return 'not_needed';
    if (result.code !== 0) throw new PostgresCommandError('pg_rewind', result.code, tail(result.stderr || result.stdout));
    return 'rewound';
  }

  /**
   * `postgres --single` with stdin at /dev/null: replays WAL and shuts down cleanly. Single-user mode
   * refuses standby mode, so standby.signal is moved aside meanwhile (and put back).
   */
  async crashRecovery(): Promise<void> {
    const running = await this.livePostmasterFromPidFile();
    if (running) throw new PostgresCommandError('postgres --single', null, `a postmaster (pid ${running}) still runs on ${this.dataDir}`);
    const signal = join(this.dataDir, 'standby.signal');
    const aside = join(this.dataDir, 'standby.signal.stator-crash-recovery');
    const moved = existsSync(signal);
    if (moved) await rename(signal, aside);
    try {
      const args = ['--single', '-D', this.dataDir, '-c', `config_file=${join(this.dataDir, 'postgresql.conf')}`, 'postgres'];
      for (let attempt = 1; ; attempt++) {
        const result = await this.run(this.binary('postgres'), args, {
          env: { LC_MESSAGES: 'C' },
          allowFailure: true,
          timeoutMs: this.deadline('rewindOrRecovery'),
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
    const info = await this.inspectDataDir();
    if (info.clusterState !== 'shut down' && info.clusterState !== 'shut down in recovery') {
      throw new PostgresCommandError('postgres --single', 0, `pg_control says "${info.clusterState}" after crash recovery`);
    }
  }

  /** Deletes the data directory. Refused while a postmaster runs on it. */
  async removeDataDir(): Promise<void> {
    const running = this.pid ?? (await this.livePostmasterFromPidFile());
    if (running) throw new Error(`cannot remove ${this.dataDir}: postmaster ${running} is running`);
    await rm(this.dataDir, { recursive: true, force: true });
  }

  // ---------------------------------------------------------------- configuration

  /**
   * Stator owns postgresql.conf. The first time, initdb's file becomes `postgresql.base.conf` (as with
   * Patroni) and is included first; then come Stator's defaults, `settings.parameters` (which may override
   * the defaults), and the parameters only Stator decides (listen, port, hba_file, the upstream).
   * pg_hba.conf comes from `postgresql.pg_hba` or a loopback default; standby.signal exists iff replica.
   */
  async configure(settings: PostgresSettings): Promise<void> {
    const confPath = join(this.dataDir, 'postgresql.conf');
    const basePath = join(this.dataDir, 'postgresql.base.conf');
    if (!existsSync(basePath) && existsSync(confPath)) {
      const current = await readFile(confPath, 'utf8');
      if (!current.startsWith(STATOR_CONF_MARKER)) await rename(confPath, basePath);
    }
    await this.writeOwnedFile(confPath, this.renderPostgresqlConf(settings));
    await this.writeOwnedFile(join(this.dataDir, 'pg_hba.conf'), this.renderHba());
    const standbySignal = join(this.dataDir, 'standby.signal');
    if (settings.role === 'replica') await this.writeOwnedFile(standbySignal, '');
    else await rm(standbySignal, { force: true });
  }

  private renderPostgresqlConf(settings: PostgresSettings): string {
    const { hosts, port } = parseListen(this.config.listen);
    const parameters: Record<string, string | number | boolean> = { ...DEFAULT_PARAMETERS };
    const given = withVersionNames({ ...this.config.parameters, ...settings.parameters }, this.majorVersion());
    for (const [name, value] of Object.entries(given)) {
      if (!STATOR_OWNED_PARAMETERS.has(name)) parameters[name] = value;
    }
    parameters.listen_addresses = hosts.join(',');
    parameters.port = port;
    parameters.hba_file = join(this.dataDir, 'pg_hba.conf');
    parameters.recovery_target_timeline = 'latest';
    if (settings.role === 'replica' && settings.upstream) {
      parameters.primary_conninfo = formatConninfo({
        host: settings.upstream.host,
        port: settings.upstream.port,
        user: this.replicationUser,
        password: this.replicationPassword,
        application_name: this.options.name,
        connect_timeout: 2,
      });
      if (settings.slotName) parameters.primary_slot_name = settings.slotName;
    }
    const lines = [
      `${STATOR_CONF_MARKER}: every change here is overwritten. Local settings belong in postgresql.base.conf`,
      '# (included first) or in the postgresql.parameters / dynamic configuration.',
      "include_if_exists 'postgresql.base.conf'",
    ];
    for (const [name, value] of Object.entries(parameters)) lines.push(`${checkParameterName(name)} = ${formatParameterValue(value)}`);
    return lines.join('\n') + '\n';
  }

  /** The data directory's PostgreSQL major version (its PG_VERSION file); 15, the version installed here, before initdb. */
  private majorVersion(): number {
    try {
      return Number.parseInt(readFileSync(join(this.dataDir, 'PG_VERSION'), 'utf8'), 10) || 15;
    } catch {
      return 15;
    }
  }

  private renderHba(): string {
    const lines = this.config.pg_hba?.length
      ? this.config.pg_hba
      : [
          'local all all trust',
          'local replication all trust',
          // Password (SCRAM) from any address PostgreSQL listens on: replicas in other hosts or containers must reach it.
          'host all all all scram-sha-256',
          `host replication ${quoteHbaName(this.replicationUser)} all scram-sha-256`,
        ];
    return `# Written by Stator from postgresql.pg_hba.\n${lines.join('\n')}\n`;
  }

  // ---------------------------------------------------------------- postmaster lifecycle

  /**
   * Spawns the fence (detached, so it outlives this agent), which spawns the postmaster; connects to the
   * fence; then polls `SELECT 1` every ~50 ms until the server accepts connections. Rejects at once when
   * the postmaster exits meanwhile (with the tail of `postgresql.log`), and after `timeoutMs` (the
   * postmaster is then left running: the caller decides, and `exits()` still reports it).
   */
  async start(timeoutMs: number): Promise<{ pid: number }> {
    const deadline = Date.now() + timeoutMs;
    if (this.fence?.connected) throw new Error(`postgres already runs under this agent's fence (pid ${this.pid})`);
    const existing = await this.connectToFence(300);
    if (existing && this.fence === existing) {
      await this.detach();
      throw new Error(`a fence already runs postgres (pid ${existing.hello.pid}) for ${this.dataDir}: adopt it`);
    }
    const orphan = await this.livePostmasterFromPidFile();
    if (orphan) throw new Error(`a postmaster (pid ${orphan}) already runs on ${this.dataDir} without a fence`);

    await mkdir(this.stateDir, { recursive: true, mode: 0o700 });
    await rm(this.paths.exitFile, { force: true });
    const osUser = await this.osUser();
    const launch: FenceLaunchOptions = {
      dataDir: this.dataDir,
      binDir: resolve(this.config.bin_dir),
      stateDir: this.stateDir,
      uid: osUser?.uid,
      gid: osUser?.gid,
    };
    // Watch before spawning: the first exit from here on is this postmaster's, even one that arrives with the hello.
    const exitWatch = this.watchExit(null);
    try {
      return await this.spawnFenceAndWait(launch, osUser, deadline, timeoutMs, exitWatch.exited);
    } finally {
      exitWatch.cancel();
    }
  }

  private async spawnFenceAndWait(
    launch: FenceLaunchOptions,
    osUser: OsUser | null,
    deadline: number,
    timeoutMs: number,
    exited: Promise<PostmasterExit>,
  ): Promise<{ pid: number }> {
    const logFd = openSync(this.paths.fenceLog, 'a');
    let fenceExited = false;
    let fenceSpawnError: Error | null = null;
    try {
      const fenceProcess = spawn(process.execPath, [this.fenceScript, JSON.stringify(launch)], {
        detached: true, // own session and process group: the agent's death or its terminal's signals do not reach it
        stdio: ['ignore', logFd, logFd],
        cwd: '/',
        env: this.childEnv(osUser),
      });
      fenceProcess.once('exit', () => (fenceExited = true));
      fenceProcess.once('error', (error) => {
        fenceSpawnError = error;
        fenceExited = true;
      });
      fenceProcess.unref();
    } finally {
      closeSync(logFd);
    }

    // The fence listens right after spawning the postmaster; an early postmaster death ends the fence too.
    let connection: FenceConnection | null = null;
    while (!connection) {
      connection = await this.connectToFence(Math.max(100, Math.min(1000, deadline - Date.now())));
      if (connection) break;
      if (fenceExited) {
        // The postmaster died before we could connect (the fence exits with it): report what the fence recorded.
        if (fenceSpawnError) throw fenceSpawnError;
        const record = this.readExitRecord();
        if (record) throw this.startFailure(record);
        throw new Error(`the fence exited without starting postgres (see ${this.paths.fenceLog})`);
      }
      if (Date.now() >= deadline) throw new Error(`the fence did not answer within ${timeoutMs} ms (see ${this.paths.fenceLog})`);
      await sleep(20);
    }

    const pid = connection.hello.pid;
    const connectionInfo = this.localConnection();
    while (Date.now() < deadline) {
      const ready = await Promise.race([
        serverAcceptsConnections(connectionInfo, Math.max(100, Math.min(1000, deadline - Date.now()))),
        exited,
      ]);
      if (ready === true) return { pid };
      if (typeof ready === 'object') throw this.startFailure(ready);
      const exit = await Promise.race([sleep(READY_POLL_MS), exited]);
      if (exit) throw this.startFailure(exit);
    }
    throw new Error(`postgres (pid ${pid}) did not accept connections within ${timeoutMs} ms; it keeps running. Log: ${this.postmasterLogTail()}`);
  }

  /** Connects to a fence left by an earlier agent (or an earlier handle). Returns its postmaster's pid, or null when no fence answers. */
  async adopt(): Promise<{ pid: number } | null> {
    if (this.fence?.connected && this.pid) return { pid: this.pid };
    const connection = await this.connectToFence(1000);
    return connection && this.fence === connection ? { pid: connection.hello.pid } : null;
  }

  /**
   * Asks the fence for a `mode` shutdown and resolves on the exit. After `timeoutMs` a smart or fast
   * stop becomes immediate, and 2 s later the postmaster gets SIGKILL (an immediate stop gets SIGKILL at
   * `timeoutMs`). Without a fence, a live postmaster named by `postmaster.pid` is signalled directly.
   * Resolves at once when nothing runs.
   */
  async stop(mode: StopMode, timeoutMs: number): Promise<void> {
    if (!this.fence?.connected) await this.adopt();
    const fence = this.fence;
    const pid = this.pid ?? (await this.livePostmasterFromPidFile());
    if (!pid) return;
    const fencePid = fence?.hello.fencePid ?? null;
    const unfencedButTracked = !fence && this.pid === pid;
    const exitWatch = this.watchExit(pid);
    let reported = false;
    void exitWatch.exited.then(() => (reported = true));
    const ask = (stopMode: StopMode) => {
      if (fence?.connected) fence.send({ op: 'stop', mode: stopMode });
      else signalQuietly(pid, STOP_SIGNALS[stopMode]);
    };
    const timers: NodeJS.Timeout[] = [];
    if (mode !== 'immediate') {
      timers.push(
        setTimeout(() => {
          this.options.log?.('warning', `postgres did not stop (${mode}) within ${timeoutMs} ms: immediate shutdown`);
          ask('immediate');
        }, timeoutMs),
      );
    }
    timers.push(
      setTimeout(
        () => {
          this.options.log?.('warning', `postgres did not stop within the grace period: SIGKILL to ${pid}`);
          signalQuietly(pid, 'SIGKILL');
        },
        mode === 'immediate' ? timeoutMs : timeoutMs + IMMEDIATE_GRACE_MS,
      ),
    );
    try {
      ask(mode);
      // The fence's exit event normally ends this; the liveness check covers a postmaster without a fence.
      while (!(await Promise.race([exitWatch.exited, sleep(fence ? 250 : 50).then(() => null)])) && isProcessAlive(pid)) {
        /* wait */
      }
    } finally {
      timers.forEach(clearTimeout);
      exitWatch.cancel();
    }
    if (this.pid === pid) this.pid = null;
    // Nobody else will report the exit of a postmaster that had lost its fence.
    if (unfencedButTracked && !reported) this.exitSubject.next({ pid, code: null, signal: null, requested: true, fenced: false });
    if (fencePid) await waitUntil(() => !isProcessAlive(fencePid), 1000);
  }

  /** SIGHUP to the postmaster (through the fence when connected). */
  async reload(): Promise<void> {
    if (this.fence?.connected) {
      this.fence.send({ op: 'signal', signal: 'SIGHUP' });
      return;
    }
    const pid = await this.livePostmasterFromPidFile();
    if (!pid) throw new Error('cannot reload: postgres is not running');
    process.kill(pid, 'SIGHUP');
  }

  /**
   * `pg_ctl promote -W` as the OS user, then waits until `pg_is_in_recovery()` is false. pg_ctl's
   * own wait polls pg_control ten times a second; asking the server directly ends the write gap of
   * a switchover up to 100 ms sooner.
   */
  async promote(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    await this.run(this.binary('pg_ctl'), ['promote', '-D', this.dataDir, '-W'], { env: { LC_MESSAGES: 'C' } });
    const connection = this.localConnection();
    while (Date.now() < deadline) {
      const inRecovery = await queryInRecovery(connection).catch(() => null);
      if (inRecovery === false) return;
      await sleep(PROMOTE_POLL_MS);
    }
    throw new Error(`postgres still in recovery ${timeoutMs} ms after pg_ctl promote`);
  }

  /**
   * Postmaster exits as the fence reports them (pushed over its socket, not polled). When the fence itself
   * vanishes without an exit event (killed), the postmaster is checked at once (allowing it 200 ms to
   * follow a fence killed with its process group): gone → an exit is emitted (code and signal unknown);
   * still alive → nothing is emitted. It then runs unfenced: no dead man's switch, and nothing will report
   * its death. `postmasterPid()` keeps its pid, and `stop` signals it directly and emits its exit.
   */
  exits(): Observable<PostmasterExit> {
    return this.exitSubject.asObservable();
  }

  /** Sets the fence's deadline (epoch ms). A no-op when not connected to a fence. */
  armFence(deadlineEpochMs: number): void {
    this.fence?.send({ op: 'arm', deadline: deadlineEpochMs });
  }

  disarmFence(): void {
    this.fence?.send({ op: 'disarm' });
  }

  async upstreamReachable(source: UpstreamNode): Promise<boolean> {
    return serverAcceptsConnections({ host: source.host, port: source.port, user: this.superuser, password: this.superuserPassword, database: 'postgres' }, 1000);
  }

  postmasterPid(): number | null {
    return this.pid;
  }

  async killProcessTree(): Promise<void> {
    const postmaster = this.pid;
    if (postmaster === null) return;
    const victims = [postmaster, ...descendantsOf(postmaster)];
    for (const pid of victims) signalQuietly(pid, 'SIGKILL');
    if (!(await waitUntil(() => victims.every((pid) => !isRunningProcess(pid)), KILL_TREE_TIMEOUT_MS))) {
      const left = victims.filter(isRunningProcess);
      throw new Error(`processes ${left.join(', ')} of postmaster ${postmaster} still run ${KILL_TREE_TIMEOUT_MS} ms after SIGKILL`);
    }
  }

  /** Closes the fence socket after flushing what was sent; the fence (armed or not) and the postmaster keep running. */
  async detach(): Promise<void> {
    const fence = this.fence;
    this.fence = null;
    this.pid = null;
    await fence?.close();
  }

  // ---------------------------------------------------------------- fence plumbing

  /** Connects to the fence (if one answers) and makes it this handle's fence. */
  private async connectToFence(timeoutMs: number): Promise<FenceConnection | null> {
    let connection: FenceConnection;
    try {
      connection = await FenceConnection.connect(this.paths.socket, timeoutMs);
    } catch {
      return null;
    }
    const previous = this.fence;
    this.fence = connection;
    this.pid = connection.hello.pid;
    if (previous && previous !== connection) void previous.close();
    // May deliver an exit that came with the hello at once, which clears this.fence again.
    connection.attach({
      onExit: (exit) => this.onFenceExit(connection, exit),
      onLost: () => void this.onFenceLost(connection),
    });
    return connection;
  }

  private onFenceExit(connection: FenceConnection, exit: PostmasterExitEvent): void {
    if (connection !== this.fence) return;
    this.fence = null;
    this.pid = null;
    this.exitSubject.next(this.withLastLog(toPostmasterExit(exit)));
  }

  private withLastLog(exit: PostmasterExit): PostmasterExit {
    // A postmaster that exits with an error code says why in its log (a port in use, a bad parameter,
    // a timeline it cannot follow): the last few lines carry it to the agent's log.
    if (exit.requested || !exit.code) return exit;
    const lastLog = this.postmasterLogTail().split('\n').slice(-6).join(' | ');
    return lastLog ? { ...exit, lastLog } : exit;
  }

  private async onFenceLost(connection: FenceConnection): Promise<void> {
    if (connection !== this.fence) return;
    this.fence = null;
    const pid = connection.hello.pid;
    // A fence killed together with its postmaster (a process-group kill) may see the postmaster outlive
    // it by a moment: give it a short while before calling it unfenced.
    await waitUntil(() => !isProcessAlive(pid), FENCE_LOSS_SETTLE_MS);
    if (this.fence || this.pid !== pid) return; // adopted or restarted meanwhile
    const record = this.readExitRecord();
    if (record && record.pid === pid) {
      this.pid = null;
      this.exitSubject.next(this.withLastLog(toPostmasterExit(record)));
    } else if (!isProcessAlive(pid)) {
      this.pid = null;
      this.exitSubject.next({ pid, code: null, signal: null, requested: false, fenced: false });
    } else {
      this.options.log?.('warning', `the fence went away but postmaster ${pid} still runs, now unfenced`);
    }
  }

  /** Resolves with the exit of `pid` (any pid when null) as emitted on exits(); `cancel` drops the subscription. */
  private watchExit(pid: number | null): { exited: Promise<PostmasterExit>; cancel(): void } {
    let subscription: { unsubscribe(): void } | null = null;
    const exited = new Promise<PostmasterExit>((resolveExit) => {
      subscription = this.exitSubject.subscribe((exit) => {
        if (pid === null || exit.pid === pid) resolveExit(exit);
      });
    });
    return { exited, cancel: () => subscription?.unsubscribe() };
  }

  private readExitRecord(): PostmasterExitEvent | null {
    try {
      return JSON.parse(readFileSync(this.paths.exitFile, 'utf8')) as PostmasterExitEvent;
    } catch {
      return null;
    }
  }

  /** The end of `<state_dir>/postgresql.log` (it holds every postmaster life, so only the end is read). */
  private postmasterLogTail(): string {
    let fd: number | null = null;
    try {
      fd = openSync(this.paths.postmasterLog, 'r');
      const size = fstatSync(fd).size;
      const length = Math.min(size, STDERR_TAIL_CHARS * 2);
      const buffer = Buffer.alloc(length);
      readSync(fd, buffer, 0, length, size - length);
      return tail(buffer.toString('utf8'));
    } catch {
      return '';
    } finally {
      if (fd !== null) closeSync(fd);
    }
  }

  private startFailure(exit: PostmasterExitEvent | PostmasterExit | null): PostgresCommandError {
    const reason = exit && 'error' in exit && exit.error ? exit.error : this.postmasterLogTail();
    return new PostgresCommandError('postgres', exit?.code ?? null, reason || `postgres exited (signal ${exit?.signal ?? 'none'})`);
  }

  /** The pid in `postmaster.pid` when that process is alive and is a postgres. */
  private async livePostmasterFromPidFile(): Promise<number | null> {
    let text: string;
    try {
      text = await readFile(join(this.dataDir, 'postmaster.pid'), 'utf8');
    } catch {
      return null;
    }
    const pid = Number(text.split('\n')[0]);
    if (!Number.isInteger(pid) || pid <= 0 || !isProcessAlive(pid)) return null;
    try {
      const command = await readFile(`/proc/${pid}/comm`, 'utf8');
      if (!/postgres|postmaster/.test(command)) return null; // the pid was reused by something else
    } catch {
      /* no /proc: trust the liveness check */
    }
    return pid;
  }

  private localConnection(): LocalConnection {
    return { ...localConnection(this.config), password: this.superuserPassword };
  }

  // ---------------------------------------------------------------- OS user, files and commands

  /** The uid/gid/home of `os_user` when the agent runs as root; null otherwise (run as ourselves). */
  private osUser(): Promise<OsUser | null> {
    if (!this.osUserLookup) {
      this.osUserLookup = (async () => {
        if (process.getuid?.() !== 0) return null;
        const name = this.config.os_user || 'postgres';
        const result = await this.run('getent', ['passwd', name], { asAgentUser: true, allowFailure: true });
        const fields = result.stdout.trim().split(':');
        if (result.code !== 0 || fields.length < 6) {
          throw new Error(`OS user ${name} not found: PostgreSQL cannot run as root (see scripts/ensure-pg-user.sh)`);
        }
        return { uid: Number(fields[2]), gid: Number(fields[3]), home: fields[5] };
      })();
      this.osUserLookup.catch(() => (this.osUserLookup = null));
    }
    return this.osUserLookup;
  }

  private async chownToOsUser(path: string): Promise<void> {
    const user = await this.osUser();
    if (user) await chown(path, user.uid, user.gid);
  }

  /** Creates the data directory (parents with default modes) owned by the OS user, mode 0700. */
  private async ensureDataDir(): Promise<void> {
    await mkdir(dirname(this.dataDir), { recursive: true });
    await mkdir(this.dataDir, { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
    await this.chownToOsUser(this.dataDir);
    await chmod(this.dataDir, 0o700);
  }

  private async emptyDataDir(): Promise<void> {
    const entries = await readdir(this.dataDir).catch(() => [] as string[]);
    await Promise.all(entries.map((entry) => rm(join(this.dataDir, entry), { recursive: true, force: true })));
  }

  /** Writes via a temporary file and rename, owned by the OS user, mode 0600. */
  private async writeOwnedFile(path: string, content: string): Promise<void> {
    const temporary = `${path}.stator-tmp`;
    await writeFile(temporary, content, { mode: 0o600 });
    await this.chownToOsUser(temporary);
    await rename(temporary, path);
  }

  /** The environment of PostgreSQL binaries: the agent's, without libpq variables, HOME of the OS user. */
  private childEnv(osUser: OsUser | null, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {};
    for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('PG')) env[key] = value;
    if (osUser) {
      env.HOME = osUser.home;
      env.USER = env.LOGNAME = this.config.os_user || 'postgres';
    }
    return { ...env, ...extra };
  }

  private deadline(kind: keyof typeof COMMAND_DEADLINES_MS): number {
    return this.options.commandDeadlinesMs?.[kind] ?? COMMAND_DEADLINES_MS[kind];
  }

  /** Runs a binary (as the OS user unless `asAgentUser`) and collects its output; throws PostgresCommandError on failure. */
  private async run(file: string, args: string[], options: CommandOptions = {}): Promise<CommandResult> {
    const osUser = options.asAgentUser ? null : await this.osUser();
    const commandName = basename(file) === 'sh' ? `${file} -c` : `${basename(file)} ${args[0] ?? ''}`.trim();
    const result = await new Promise<CommandResult>((resolveRun, rejectRun) => {
      const child = spawn(file, args, {
        cwd: options.cwd ?? (osUser ? '/' : undefined),
        env: options.asAgentUser ? process.env : this.childEnv(osUser, options.env),
        stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
        uid: osUser?.uid,
        gid: osUser?.gid,
      });
      let stdout = '';
      let stderr = '';
      // Keep only the tails: pg_basebackup or initdb may be chatty.
      child.stdout?.on('data', (chunk: Buffer) => (stdout = (stdout + chunk.toString()).slice(-65536)));
      child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-65536)));
      const timeoutMs = options.timeoutMs ?? this.deadline('short');
      let killTimer: NodeJS.Timeout | undefined;
      const deadline = setTimeout(() => {
        stderr += `\n${commandName} did not finish within ${Math.round(timeoutMs / 1000)} s: killed`;
        child.kill('SIGTERM');
        killTimer = setTimeout(() => child.kill('SIGKILL'), COMMAND_KILL_GRACE_MS);
      }, timeoutMs);
      const settle = () => {
        clearTimeout(deadline);
        clearTimeout(killTimer);
      };
      child.once('error', (error) => {
        settle();
        rejectRun(new PostgresCommandError(commandName, null, error.message));
      });
      child.once('close', (code, signal) => {
        settle();
        resolveRun({ code, signal, stdout, stderr });
      });
      if (options.input !== undefined) {
        child.stdin?.on('error', () => undefined); // the child may exit before reading everything
        child.stdin?.end(options.input);
      }
    });
    if (result.code !== 0 && !options.allowFailure) {
      throw new PostgresCommandError(commandName, result.code, tail(result.stderr || result.stdout) || `killed by ${result.signal}`);
    }
    return result;
  }
}

// ------------------------------------------------------------------ helpers

function defaultFenceScript(): string {
  const besideUs = join(__dirname, 'fence', 'fence-main.js');
  if (existsSync(besideUs)) return besideUs;
  // Running from the TypeScript sources (jest): the fence is a separate Node program, so use the build.
  return resolve(__dirname, '..', '..', 'dist', 'src', 'postgresql', 'fence', 'fence-main.js');
}

function toPostmasterExit(exit: PostmasterExitEvent): PostmasterExit {
  return { pid: exit.pid, code: exit.code, signal: exit.signal, requested: exit.requested, fenced: exit.fenced };
}

/** pg_controldata's fields, read with LC_ALL=C. */
export function parseControlData(text: string): Partial<DataDirInfo> {
  const fields = new Map<string, string>();
  for (const line of text.split('\n')) {
    const separator = line.indexOf(':');
    if (separator > 0) fields.set(line.slice(0, separator).trim(), line.slice(separator + 1).trim());
  }
  const info: Partial<DataDirInfo> = {};
  const systemIdentifier = fields.get('Database system identifier');
  if (systemIdentifier) info.systemIdentifier = systemIdentifier;
  const clusterState = fields.get('Database cluster state');
  if (clusterState) info.clusterState = clusterState;
  const timeline = Number(fields.get("Latest checkpoint's TimeLineID"));
  if (Number.isInteger(timeline) && timeline > 0) info.timeline = timeline;
  const location = fields.get('Latest checkpoint location');
  if (location) info.checkpointLsn = parseLsn(location);
  return info;
}

/** `host[,host...]:port` → listen_addresses and port. */
function parseListen(listen: string): { hosts: string[]; port: number } {
  const separator = listen.lastIndexOf(':');
  const port = Number(listen.slice(separator + 1));
  if (separator < 0 || !Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`postgresql.listen must be host:port, got ${listen}`);
  const hosts = listen
    .slice(0, separator)
    .split(',')
    .map((host) => host.trim().replace(/^\[|\]$/g, ''))
    .filter(Boolean);
  return { hosts: hosts.length ? hosts : ['localhost'], port };
}

function checkParameterName(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_.]*$/.test(name)) throw new Error(`invalid PostgreSQL parameter name: ${JSON.stringify(name)}`);
  return name;
}

/** A postgresql.conf value: booleans as on/off, numbers bare, strings quoted (`'` doubled, `\` escaped). */
export function formatParameterValue(value: string | number | boolean): string {
  if (typeof value === 'boolean') return value ? 'on' : 'off';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`invalid parameter value ${value}`);
    return String(value);
  }
  if (/[\n\r]/.test(value)) throw new Error('a parameter value cannot contain a line break');
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

/** libpq conninfo; values quoted when they need it. Undefined values are left out. */
function formatConninfo(parameters: Record<string, string | number | undefined>): string {
  return Object.entries(parameters)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => {
      const text = String(value);
      const safe = text !== '' && /^[^\s'\\]+$/.test(text);
      return `${key}=${safe ? text : `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`}`;
    })
    .join(' ');
}

function formatInitdbOptions(options: Array<string | Record<string, string>>): string[] {
  return options.flatMap((option) =>
    typeof option === 'string'
      ? [`--${option}`]
      : Object.entries(option).map(([key, value]) => `--${key}=${value}`),
  );
}

function quoteHbaName(name: string): string {
  return /^[A-Za-z0-9_]+$/.test(name) ? name : `"${name.replace(/"/g, '')}"`;
}

function passwordEnv(password: string | undefined): Record<string, string> {
  return password === undefined ? {} : { PGPASSWORD: password };
}

function tail(text: string): string {
  return text.trim().slice(-STDERR_TAIL_CHARS);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolveSleep) => setTimeout(resolveSleep, ms));
}

async function waitUntil(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() >= deadline) return false;
    await sleep(20);
  }
  return true;
}

/** Alive and not a zombie (a killed postmaster may linger as one until its new parent reaps it). */
function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc: kill(0) is all we know
  }
}

function signalQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    /* already gone */
  }
}

async function queryInRecovery(connection: LocalConnection): Promise<boolean> {
  const client = new Client({ ...connection, database: connection.database ?? 'postgres', connectionTimeoutMillis: 1000, query_timeout: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const { rows } = await client.query<{ in_recovery: boolean }>('SELECT pg_catalog.pg_is_in_recovery() AS in_recovery');
    return rows[0].in_recovery;
  } finally {
    await client.end().catch(() => undefined);
  }
}
