import { Observable, Subject } from 'rxjs';
import {
  DataDirInfo,
  FenceState,
  PostgresCommandError,
  PostgresProcess,
  PostgresSettings,
  PostmasterExit,
  ReplicaMethod,
  StopEscalation,
  StopMode,
  UpstreamNode,
} from '../postgres.port';
import { BootstrapMethod } from '../../config/config.types';
import { methodFlag } from '../../config/custom-methods-config';
import { MemoryPostgresServer } from './memory-postgres';
import { CHECKPOINT_RECORD_BYTES, MemoryCluster } from './memory-state';
import { divergencePoint } from './wal-history';

/** Where initdb leaves its checkpoint record (PostgreSQL's first WAL segment starts at 0/1000000). */
const INITDB_CHECKPOINT_LSN = 0x1000028;

/**
 * The PostgresProcess port over a MemoryPostgresServer: the binaries as functions of the simulated
 * data directory, the fence as a pid this handle is attached to. As with RealPostgresProcess, a
 * handle sees exits only while attached (after `start` or `adopt`; `stop` adopts first), `armFence`
 * is a no-op when not attached, `detach` leaves the postmaster and its fence running, and start
 * failures reject without an exit on `exits()`. Every method answers at once; fence deadlines are
 * checked against the network's clock on every call (and by `server.tick()`).
 */
export class MemoryPostgresProcess implements PostgresProcess {
  private readonly exitSubject = new Subject<PostmasterExit>();
  private attachedPid: number | null = null;
  /** The deadline last armed (null: disarmed): the fence of the next postmaster started starts armed with it. */
  private wantedDeadline: number | null = null;
  /** The commands `customBootstrap` ran, oldest first. */
  readonly bootstrapCommands: string[] = [];
  /** The custom replica methods `createReplicaWith` ran, oldest first. */
  readonly replicaMethodsRun: string[] = [];
  /** Each `archiveWalFile` call, in order: the command and the WAL file. */
  readonly archivedWalFiles: Array<{ command: string; walFile: string }> = [];
  /** What `saveDynamicConfigCache` wrote last. */
  savedDynamicConfig: Record<string, unknown> | null = null;

  constructor(readonly server: MemoryPostgresServer) {
    server.exits.subscribe((exit) => {
      if (exit.pid !== this.attachedPid) return;
      this.attachedPid = null;
      this.exitSubject.next(exit);
    });
  }

  async inspectDataDir(): Promise<DataDirInfo> {
    this.server.tick();
    const cluster = this.server.cluster;
    if (!cluster) return { state: this.server.dataDir === 'missing' ? 'missing' : 'empty', standbySignal: false };
    return {
      state: 'initialized',
      standbySignal: cluster.standbySignal,
      systemIdentifier: cluster.systemIdentifier,
      clusterState: cluster.clusterState,
      timeline: cluster.checkpoint.timeline,
      checkpointLsn: cluster.checkpoint.lsn,
    };
  }

  async initdb(): Promise<void> {
    this.refuseExistingCluster(
      'initdb -D',
      `initdb: error: directory "${this.server.dataDirPath}" exists but is not empty`,
    );
    this.server.takeFailure('initdb', (message) => new PostgresCommandError('initdb -D', 1, message));
    this.createCluster();
  }

  async customBootstrap(method: BootstrapMethod): Promise<void> {
    this.bootstrapCommands.push(method.command);
    this.refuseExistingCluster('/bin/sh -c', `the script found ${this.server.dataDirPath} not empty`);
    this.server.dataDir = 'empty';
    this.server.takeFailure('customBootstrap', (message) => new PostgresCommandError('/bin/sh -c', 1, message));
    this.createCluster();
  }

  async postBootstrap(): Promise<void> {
    const cluster = this.server.cluster;
    const fail = (message: string) => new PostgresCommandError('post-bootstrap (replication role)', null, message);
    if (!this.server.postmaster || !cluster) throw fail(`connect ECONNREFUSED 127.0.0.1:${this.server.port}`);
    this.server.takeFailure('postBootstrap', fail);
    cluster.replicationRole = true;
  }

  /** A custom replica method stands in for a restore: it copies `source` as pg_basebackup would (a backup of it). */
  async createReplicaWith(method: ReplicaMethod, source: UpstreamNode | null): Promise<void> {
    this.replicaMethodsRun.push(method.name);
    if (!methodFlag(method.options, 'keep_data')) {
      this.server.cluster = null;
      this.server.dataDir = 'empty';
    }
    this.server.takeFailure(
      'createReplica',
      (message) => new PostgresCommandError(`replica method ${method.name}`, 1, message),
    );
    if (!source)
      throw new PostgresCommandError(
        `replica method ${method.name}`,
        1,
        'no backup to restore in memory without a member to copy',
      );
    return this.basebackup(source);
  }

  /** Copies the upstream's cluster (system identifier, timeline, history, WAL) after a fast checkpoint on it; slots stay behind. */
  async basebackup(source: UpstreamNode): Promise<void> {
    this.server.tick();
    if (this.server.cluster)
      throw new PostgresCommandError('pg_basebackup', null, `data directory ${this.server.dataDirPath} is not empty`);
    this.server.dataDir = 'empty';
    const fail = (message: string) => new PostgresCommandError('pg_basebackup -D', 1, message);
    this.server.takeFailure('basebackup', fail);
    const upstream = this.server.network.connect(this.server, source);
    const from = upstream?.cluster;
    if (!upstream || !from) throw fail(`pg_basebackup: error: ${connectionRefused(source)}`);
    if (!from.replicationRole) {
      throw fail(
        `pg_basebackup: error: connection to server at "${source.host}", port ${source.port} failed: FATAL:  password authentication failed for user "${this.server.replicationUser}"`,
      );
    }
    upstream.checkpointNow();
    this.server.cluster = {
      ...copyWal(from),
      systemIdentifier: from.systemIdentifier,
      clusterState: upstream.postmaster?.inRecovery ? 'in archive recovery' : 'in production',
      standbySignal: false,
      checkpoint: { ...from.checkpoint },
      slots: new Set(),
      settings: copySettings(from.settings),
      replicationRole: from.replicationRole,
    };
    this.server.dataDir = 'initialized';
  }

  /**
   * pg_rewind: needs a cleanly shut down target and a running source of the same system. When the
   * target's WAL goes past the point where the histories part, it takes the source's timeline,
   * history, WAL and configuration files (standby.signal included: call `configure` before the next
   * start), restarts from the last checkpoint both share, and loses its slots.
   */
  async rewind(source: UpstreamNode): Promise<'rewound' | 'not_needed'> {
    this.server.tick();
    const fail = (message: string) => new PostgresCommandError('pg_rewind', 1, message);
    const target = this.server.cluster;
    if (!target)
      throw fail(
        `pg_rewind: error: could not open file "${this.server.dataDirPath}/global/pg_control" for reading: No such file or directory`,
      );
    if (this.server.postmaster || !target.clusterState.startsWith('shut down'))
      throw fail('pg_rewind: error: target server must be shut down cleanly');
    this.server.takeFailure('rewind', fail);
    const from = this.server.network.connect(this.server, source)?.cluster;
    if (!from) throw fail(`pg_rewind: error: could not connect to server: ${connectionRefused(source)}`);
    if (from.systemIdentifier !== target.systemIdentifier)
      throw fail('pg_rewind: error: source and target clusters are from different systems');
    const divergence = divergencePoint(target, from);
    if (divergence === null || target.walEnd <= divergence) return 'not_needed';
    const common = target.checkpointRecords.filter((record) => record.lsn < divergence).at(-1) ?? target.checkpoint;
    Object.assign(target, copyWal(from), {
      checkpoint: { ...common },
      clusterState: 'in archive recovery',
      standbySignal: from.standbySignal,
      settings: copySettings(from.settings),
    });
    target.slots.clear();
    return 'rewound';
  }

  /** Single-user mode: replays the local WAL and shuts down cleanly with a checkpoint on the same timeline. */
  async crashRecovery(): Promise<void> {
    this.server.tick();
    const fail = (message: string) => new PostgresCommandError('postgres --single', 1, message);
    if (this.server.postmaster) {
      throw new PostgresCommandError(
        'postgres --single',
        null,
        `a postmaster (pid ${this.server.pid}) still runs on ${this.server.dataDirPath}`,
      );
    }
    const cluster = this.server.cluster;
    if (!cluster)
      throw fail(`postgres: could not access directory "${this.server.dataDirPath}": No such file or directory`);
    this.server.takeFailure('crashRecovery', fail);
    cluster.replayLsn = cluster.walEnd;
    this.server.checkpointNow();
    cluster.clusterState = 'shut down';
  }

  async removeDataDir(): Promise<void> {
    this.server.tick();
    if (this.server.postmaster)
      throw new Error(`cannot remove ${this.server.dataDirPath}: postmaster ${this.server.pid} is running`);
    this.server.dataDir = 'missing';
    this.server.cluster = null;
  }

  async configure(settings: PostgresSettings): Promise<void> {
    const cluster = this.server.cluster;
    if (!cluster)
      throw new Error(`ENOENT: no such file or directory, open '${this.server.dataDirPath}/postgresql.conf'`);
    cluster.settings = copySettings(settings);
    cluster.standbySignal = settings.role === 'replica';
  }

  /** Starts at once (recovery is instant here), so any `timeoutMs` suffices; failures reject with the log's tail. */
  async start(_timeoutMs: number): Promise<{ pid: number }> {
    this.server.tick();
    const running = this.server.pid;
    if (running !== null && running === this.attachedPid)
      throw new Error(`postgres already runs under this agent's fence (pid ${running})`);
    if (running !== null)
      throw new Error(`a fence already runs postgres (pid ${running}) for ${this.server.dataDirPath}: adopt it`);
    const asPrimary = this.server.cluster?.standbySignal === false;
    this.attachedPid = this.server.startPostmaster();
    if (this.wantedDeadline !== null && asPrimary) this.armFence(this.wantedDeadline);
    return { pid: this.attachedPid };
  }

  async adopt(): Promise<{ pid: number } | null> {
    this.server.tick();
    this.attachedPid = this.server.pid;
    return this.attachedPid === null ? null : { pid: this.attachedPid };
  }

  async stop(mode: StopMode, _timeoutMs: number, onEscalation?: (step: StopEscalation) => void): Promise<void> {
    if (this.attachedPid === null) await this.adopt();
    // A frozen postmaster ignores the shutdown: the real adapter SIGKILLs it at the deadline.
    if (this.server.postmaster?.frozen) onEscalation?.('sigkill');
    this.server.stopPostmaster(mode);
  }

  async archiveWalFile(command: string, walFile: string): Promise<void> {
    this.server.tick();
    if (this.server.postmaster) throw new Error('archiving the shutdown checkpoint of a running server');
    this.archivedWalFiles.push({ command, walFile });
  }

  async reload(): Promise<void> {
    this.server.tick();
    if (!this.server.postmaster) throw new Error('cannot reload: postgres is not running');
    this.server.reload();
  }

  /** Resolves once the server left recovery: the timeline goes up by one and the history file names the switch point. */
  async promote(timeoutMs: number): Promise<void> {
    this.server.tick();
    const fail = (message: string) => new PostgresCommandError('pg_ctl promote', 1, message);
    const postmaster = this.server.postmaster;
    if (!postmaster)
      throw fail(`pg_ctl: PID file "${this.server.dataDirPath}/postmaster.pid" does not exist\nIs server running?`);
    if (!postmaster.inRecovery) throw fail('pg_ctl: cannot promote server; server is not in standby mode');
    this.server.takeFailure('promote', fail);
    if (postmaster.frozen) throw new Error(`postgres still in recovery ${timeoutMs} ms after pg_ctl promote`);
    this.server.promote();
  }

  exits(): Observable<PostmasterExit> {
    return this.exitSubject.asObservable();
  }

  /** Records the deadline on the running postmaster's fence; a deadline already past stops it at once. */
  armFence(deadlineEpochMs: number): void {
    this.wantedDeadline = deadlineEpochMs;
    const postmaster = this.server.postmaster;
    if (!postmaster || postmaster.pid !== this.attachedPid) return;
    const { clock } = this.server.network;
    postmaster.fenceDeadline = clock.monotonic() + (deadlineEpochMs - clock.now());
    this.server.tick();
  }

  /** The in-memory fence ends no term on its own (no in-memory DCS can be reached from outside the agent). */
  takeFenceJournal(): [] {
    return [];
  }

  disarmFence(): void {
    this.wantedDeadline = null;
    const postmaster = this.server.postmaster;
    if (postmaster && postmaster.pid === this.attachedPid) postmaster.fenceDeadline = null;
  }

  fenceState(): FenceState {
    const postmaster = this.server.postmaster;
    const attached = postmaster !== null && postmaster !== undefined && postmaster.pid === this.attachedPid;
    const { clock } = this.server.network;
    const deadline =
      attached && postmaster.fenceDeadline !== null
        ? clock.now() + (postmaster.fenceDeadline - clock.monotonic())
        : null;
    return { connected: attached, deadline };
  }

  postmasterPid(): number | null {
    return this.attachedPid;
  }

  async killProcessTree(): Promise<void> {
    if (this.attachedPid !== null) this.server.killPostmaster();
  }

  async upstreamReachable(source: UpstreamNode): Promise<boolean> {
    this.server.tick();
    return this.server.network.connect(this.server, source) !== null;
  }

  async checkpointOn(source: UpstreamNode): Promise<void> {
    if (!(await this.upstreamReachable(source))) throw new Error(`connection to ${source.host}:${source.port} failed`);
  }

  async copyLogicalSlot(): Promise<void> {
    throw new Error('logical slots are not simulated by the in-memory PostgreSQL');
  }

  async saveDynamicConfigCache(config: Record<string, unknown>): Promise<void> {
    this.server.tick();
    if (!this.server.cluster) throw new Error(`${this.server.dataDirPath} holds no cluster`);
    this.savedDynamicConfig = structuredClone(config);
  }

  async readDynamicConfigCache(): Promise<Record<string, unknown> | null> {
    this.server.tick();
    return this.server.cluster && this.savedDynamicConfig ? structuredClone(this.savedDynamicConfig) : null;
  }

  async detach(): Promise<void> {
    this.wantedDeadline = null;
    this.attachedPid = null;
  }

  private refuseExistingCluster(command: string, message: string): void {
    this.server.tick();
    if (this.server.cluster) throw new PostgresCommandError(command, 1, message);
  }

  private createCluster(): void {
    const checkpoint = { lsn: INITDB_CHECKPOINT_LSN, timeline: 1 };
    const walEnd = INITDB_CHECKPOINT_LSN + CHECKPOINT_RECORD_BYTES;
    this.server.cluster = {
      systemIdentifier: this.server.network.newSystemIdentifier(),
      clusterState: 'shut down',
      standbySignal: false,
      timeline: 1,
      history: [],
      walEnd,
      replayLsn: walEnd,
      checkpoint,
      checkpointRecords: [{ ...checkpoint }],
      commitAt: null,
      replayedCommitAt: null,
      slots: new Set(),
      settings: null,
      replicationRole: false,
    };
    this.server.dataDir = 'initialized';
  }
}

/** The WAL-related part of a cluster, copied (not shared) as a clone or a rewind copies it. */
function copyWal(from: MemoryCluster) {
  return {
    timeline: from.timeline,
    history: [...from.history],
    walEnd: from.walEnd,
    replayLsn: from.walEnd,
    checkpointRecords: from.checkpointRecords.map((record) => ({ ...record })),
    commitAt: from.commitAt,
    replayedCommitAt: from.commitAt,
  };
}

function copySettings(settings: PostgresSettings | null): PostgresSettings | null {
  if (!settings) return null;
  return {
    ...settings,
    upstream: settings.upstream ? { ...settings.upstream } : settings.upstream,
    parameters: { ...settings.parameters },
  };
}

function connectionRefused(node: UpstreamNode): string {
  return `connection to server at "${node.host}", port ${node.port} failed: Connection refused`;
}
