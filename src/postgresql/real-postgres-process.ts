import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Observable } from 'rxjs';
import { formatLsn, parseLsn } from '../common/lsn';
import { fencePaths } from './fence/fence-protocol';
import { Client } from 'pg';
import { serverAcceptsConnections, toClientConfig } from './local-connection';
import { BootstrapMethod } from '../config/config.types';
import {
  DataDirInfo,
  FenceJournalEntry,
  FenceState,
  FenceWatchdog,
  LeaderTerm,
  PostgresProcess,
  PostgresSettings,
  PostmasterExit,
  ReplicaMethod,
  StopEscalation,
  StopMode,
  UpstreamNode,
} from './postgres.port';
import { archiveWalFile } from './process/archive-command';
import { CommandDeadline, CommandRunner } from './process/commands';
import { ConfigurationFiles } from './process/configuration-files';
import { CustomMethods } from './process/custom-methods';
import { ControlDataReader } from './process/control-data';
import { DataDirectory } from './process/data-directory';
import { InitdbOptions } from './process/tool-arguments';
import { FenceLink } from './process/fence-link';
import { defaultFenceProgram, FenceProgram } from './process/fence-program';
import { AdapterLog, LocalPostgres, LocalPostgresOptions } from './process/local-postgres';
import { Postmaster } from './process/postmaster';

export { formatParameterValue } from './process/configuration-files';
export { parseControlData } from './process/tool-arguments';

export interface RealPostgresProcessOptions extends LocalPostgresOptions {
  /** Node-local state: fence socket, fence pid, postmaster log, last exit record. */
  stateDir: string;
  /** The fence program and its interpreter. Default: `fence/fence_main.py` beside this module, run by Python 3. */
  fence?: FenceProgram;
  /** Extra initdb options in Patroni's `bootstrap.initdb` form: `'data-checksums'` or `{encoding: 'UTF8'}`. */
  initdbOptions?: InitdbOptions;
  /** `bootstrap.post_bootstrap`: run once after a new cluster's bootstrap, with the superuser's conninfo appended. */
  postBootstrapCommand?: string;
  /** The cluster's name, passed to custom bootstrap and replica methods as `--scope`. */
  scope?: string;
  /** Diagnostics (fence lost, escalations). Default: silent. */
  log?: AdapterLog;
  /** Shorter command deadlines than COMMAND_DEADLINES_MS (tests). */
  commandDeadlinesMs?: Partial<Record<CommandDeadline, number>>;
}

/** Patroni's name for its cache of the dynamic configuration in the data directory; tools and scripts expect it there. */
const DYNAMIC_CONFIG_CACHE = 'patroni.dynamic.json';

/** The longest unix socket path Linux accepts (sun_path is 108 bytes with the terminating NUL). */
const MAX_SOCKET_PATH = 107;

/**
 * The PostgresProcess port over the real binaries. The postmaster runs under a fence (see
 * `fence/fence_postmaster.py`): a separate detached process that is its parent, reports its exit at once and
 * enforces the primary's dead man's switch even when this agent is gone.
 *
 * When the agent runs as root, every PostgreSQL binary runs as `config.os_user` (spawn uid/gid), and the
 * data directory and every file written into it belong to that user.
 *
 * The work is done in `process/`: the data directory (`data-directory.ts`), the configuration files
 * (`configuration-files.ts`), the postmaster's life (`postmaster.ts`), the fence connection and exit
 * reports (`fence-link.ts`), PostgreSQL's log (`postmaster-log.ts`), and the binaries with their
 * deadlines (`commands.ts`).
 */
export class RealPostgresProcess implements PostgresProcess {
  private readonly local: LocalPostgres;
  private readonly dataDirectory: DataDirectory;
  private readonly customMethods: CustomMethods;
  private readonly configurationFiles: ConfigurationFiles;
  private readonly fenceLink: FenceLink;
  private readonly postmaster: Postmaster;
  private readonly commands: CommandRunner;

  constructor(options: RealPostgresProcessOptions) {
    const stateDir = resolve(options.stateDir);
    const paths = fencePaths(stateDir);
    const fence = options.fence ?? defaultFenceProgram();
    if (paths.socket.length > MAX_SOCKET_PATH) {
      throw new Error(
        `state_dir ${stateDir} is too long for a unix socket path (${paths.socket.length} > ${MAX_SOCKET_PATH})`,
      );
    }
    this.local = new LocalPostgres(options);
    const commands = new CommandRunner(options.config, options.commandDeadlinesMs);
    this.commands = commands;
    // One reader, so that a pg_controldata run for the configuration serves the next inspection too.
    const controlData = new ControlDataReader(this.local, commands);
    this.dataDirectory = new DataDirectory(
      this.local,
      commands,
      options.initdbOptions,
      options.postBootstrapCommand,
      controlData,
    );
    this.customMethods = new CustomMethods(this.local, commands, this.dataDirectory, options.scope ?? '');
    this.configurationFiles = new ConfigurationFiles(this.local, commands, options.log, controlData);
    this.fenceLink = new FenceLink(paths, options.log);
    this.postmaster = new Postmaster(this.local, commands, this.fenceLink, {
      stateDir,
      paths,
      fence,
      log: options.log,
    });
  }

  // ---------------------------------------------------------------- data directory

  async inspectDataDir(): Promise<DataDirInfo> {
    return this.dataDirectory.inspect();
  }

  async initdb(): Promise<void> {
    return this.dataDirectory.initdb();
  }

  async customBootstrap(method: BootstrapMethod): Promise<void> {
    return this.customMethods.bootstrap(method);
  }

  async postBootstrap(): Promise<void> {
    return this.dataDirectory.postBootstrap();
  }

  async basebackup(source: UpstreamNode): Promise<void> {
    return this.dataDirectory.basebackup(source);
  }

  async createReplicaWith(method: ReplicaMethod, source: UpstreamNode | null): Promise<void> {
    return this.customMethods.createReplica(method, source);
  }

  async rewind(source: UpstreamNode): Promise<'rewound' | 'not_needed'> {
    return this.dataDirectory.rewind(source);
  }

  async crashRecovery(): Promise<void> {
    return this.dataDirectory.crashRecovery();
  }

  /** Deletes the data directory. Refused while a postmaster runs on it. */
  async removeDataDir(): Promise<void> {
    return this.dataDirectory.remove(this.fenceLink.postmasterPid);
  }

  // ---------------------------------------------------------------- configuration

  async configure(settings: PostgresSettings): Promise<void> {
    return this.configurationFiles.write(settings);
  }

  // ---------------------------------------------------------------- postmaster lifecycle

  async start(timeoutMs: number): Promise<{ pid: number }> {
    return this.postmaster.start(timeoutMs);
  }

  async adopt(): Promise<{ pid: number } | null> {
    return this.postmaster.adopt();
  }

  async stop(mode: StopMode, timeoutMs: number, onEscalation?: (step: StopEscalation) => void): Promise<void> {
    return this.postmaster.stop(mode, timeoutMs, onEscalation);
  }

  async reload(): Promise<void> {
    return this.postmaster.reload();
  }

  async archiveWalFile(archiveCommand: string, walFile: string, timeoutMs: number): Promise<void> {
    await archiveWalFile(this.commands, this.local.dataDir, archiveCommand, walFile, timeoutMs);
  }

  async promote(timeoutMs: number): Promise<void> {
    return this.postmaster.promote(timeoutMs);
  }

  async killProcessTree(): Promise<void> {
    return this.postmaster.killProcessTree();
  }

  postmasterPid(): number | null {
    return this.fenceLink.postmasterPid;
  }

  async upstreamReachable(source: UpstreamNode): Promise<boolean> {
    const { superuser, superuserPassword, config } = this.local;
    const libpq = config.authentication.superuser.libpq;
    return serverAcceptsConnections(
      {
        host: source.host,
        port: source.port,
        user: superuser,
        password: superuserPassword,
        database: 'postgres',
        libpq,
      },
      1000,
    );
  }

  async checkpointOn(source: UpstreamNode): Promise<void> {
    await this.onSource(source, (client) => client.query('CHECKPOINT'));
  }

  async copyLogicalSlot(source: UpstreamNode, name: string, oldestWal: number): Promise<void> {
    if (!/^[a-z0-9_]{1,63}$/.test(name)) throw new Error(`not a slot name: ${name}`);
    const { state, restartLsn } = await this.onSource(source, async (client) => {
      const result = await client.query<{ state: Buffer; restart_lsn: string | null }>(
        `SELECT pg_catalog.pg_read_binary_file('pg_replslot/' || slot_name || '/state') AS state, restart_lsn::text
         FROM pg_catalog.pg_replication_slots WHERE slot_name = $1 AND slot_type = 'logical'`,
        [name],
      );
      if (result.rows.length === 0) throw new Error(`${source.name} has no logical slot ${name}`);
      return { state: result.rows[0].state, restartLsn: parseLsn(result.rows[0].restart_lsn ?? '0/0') };
    });
    if (restartLsn < oldestWal) {
      throw new Error(
        `not copying logical slot ${name} yet: it needs WAL from ${formatLsn(restartLsn)}, which this replica no longer holds (its WAL begins at ${formatLsn(oldestWal)}); it is copied once its consumer moves it on`,
      );
    }
    const directory = join(this.local.dataDir, 'pg_replslot', name);
    await mkdir(directory, { recursive: true, mode: 0o700 });
    await this.commands.chownToOsUser(directory);
    await this.commands.writeOwnedFile(join(directory, 'state'), state);
  }

  /** `work` on a superuser connection to `source`, closed after; five seconds at most per statement. */
  private async onSource<T>(source: UpstreamNode, work: (client: Client) => Promise<T>): Promise<T> {
    const { superuser, superuserPassword, config } = this.local;
    const libpq = config.authentication.superuser.libpq;
    const client = new Client({
      ...toClientConfig({
        host: source.host,
        port: source.port,
        user: superuser,
        password: superuserPassword,
        database: 'postgres',
        libpq,
      }),
      connectionTimeoutMillis: 2000,
      query_timeout: 5000,
      statement_timeout: 5000,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return await work(client);
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  // ---------------------------------------------------------------- fence

  exits(): Observable<PostmasterExit> {
    return this.fenceLink.exits();
  }

  armFence(deadlineEpochMs: number, term?: LeaderTerm, watchdog?: FenceWatchdog): void {
    this.fenceLink.arm(deadlineEpochMs, term && { ...term, agentPid: process.pid }, watchdog);
  }

  takeFenceJournal(): FenceJournalEntry[] {
    return this.fenceLink.takeJournal();
  }

  disarmFence(): void {
    this.fenceLink.disarm();
  }

  fenceState(): FenceState {
    return this.fenceLink.state();
  }

  async detach(): Promise<void> {
    return this.fenceLink.detach();
  }

  async saveDynamicConfigCache(config: Record<string, unknown>): Promise<void> {
    await this.commands.writeOwnedFile(join(this.local.dataDir, DYNAMIC_CONFIG_CACHE), JSON.stringify(config));
  }

  async readDynamicConfigCache(): Promise<Record<string, unknown> | null> {
    const file = join(this.local.dataDir, DYNAMIC_CONFIG_CACHE);
    if (!existsSync(file)) return null;
    const parsed: unknown = JSON.parse(await readFile(file, 'utf8'));
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
      throw new Error(`${file} holds no JSON mapping`);
    return parsed as Record<string, unknown>;
  }
}
