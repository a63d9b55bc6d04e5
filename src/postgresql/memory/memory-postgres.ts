import { Observable, Subject } from 'rxjs';
import { formatLsn } from '../../common/lsn';
import { PostgresCommandError, PostmasterExit, ReplicationConnection, StopMode, UpstreamNode } from '../postgres.port';
import {
  FailableOperation,
  MemoryCluster,
  MemoryPostgresServerOptions,
  MemoryPostmaster,
  postgresLogTime,
  renderParameters,
  ServerNetwork,
} from './memory-state';
import { replicationRows } from './sync-states';
import { forkBeforeCheckpoint, TimelineSwitch } from './wal-history';
import { endRecovery, receiveAndReplay, reloadSettings, restartpoint, writeCheckpoint } from './wal-records';

/**
 * One simulated PostgreSQL server: its data directory and its postmaster. The adapters
 * (MemoryPostgresProcess, MemoryPostgresQuery) act on it as the binaries and SQL would; tests drive
 * the world through it (`write`, `crash`, `freeze`, `failNext`, `takePort`, `setReachable`, ...).
 * Replication is settled by the network after every change, so a streaming replica is always
 * caught up unless a test paused it. Nothing here waits: time is the network's Clock.
 */
export class MemoryPostgresServer {
  readonly name: string;
  readonly host: string;
  readonly port: number;
  readonly serverVersion: number;
  readonly dataDirPath: string;
  readonly replicationUser: string;
  dataDir: 'missing' | 'empty' | 'initialized' = 'missing';
  cluster: MemoryCluster | null = null;
  postmaster: MemoryPostmaster | null = null;
  /** Reachable from the other servers of the network (local connections always work). */
  reachable = true;
  portTaken = false;
  streamingPaused = false;
  /** The postmaster's log, one line per entry. */
  readonly log: string[] = [];
  private readonly failures: Array<{ operation: FailableOperation; message: string }> = [];
  private readonly exitSubject = new Subject<PostmasterExit>();
  private waiters: Array<{ resolve(): void; reject(error: Error): void }> = [];

  constructor(
    readonly network: ServerNetwork<MemoryPostgresServer>,
    options: MemoryPostgresServerOptions,
  ) {
    this.name = options.name;
    this.host = options.host ?? options.name;
    this.port = options.port ?? 5432;
    this.serverVersion = options.serverVersion ?? 150010;
    this.dataDirPath = options.dataDir ?? `/var/lib/postgresql/${options.name}`;
    this.replicationUser = options.replicationUser ?? 'replicator';
  }

  // ---------------------------------------------------------------- what tests read

  /** This server as an upstream for `basebackup`, `rewind` and replica settings. */
  get node(): UpstreamNode {
    return { name: this.name, host: this.host, port: this.port };
  }
  get pid(): number | null {
    return this.postmaster?.pid ?? null;
  }
  get isRunning(): boolean {
    return this.postmaster !== null;
  }
  get inRecovery(): boolean | null {
    return this.postmaster ? this.postmaster.inRecovery : null;
  }
  get timeline(): number | null {
    return this.cluster?.timeline ?? null;
  }
  get history(): readonly TimelineSwitch[] {
    return this.cluster?.history ?? [];
  }
  get walPosition(): number | null {
    return this.cluster?.walEnd ?? null;
  }
  get systemIdentifier(): string | null {
    return this.cluster?.systemIdentifier ?? null;
  }
  get isStreaming(): boolean {
    return this.postmaster?.streaming ?? false;
  }
  /** A parameter's value in force in the running server, undefined when it is not running or not set. */
  parameter(name: string): string | undefined {
    return this.postmaster?.parameters[name];
  }
  get fenceDeadline(): number | null {
    return this.postmaster?.fenceDeadline ?? null;
  }
  get slots(): string[] {
    return [...(this.cluster?.slots ?? [])].sort();
  }
  /** Postmaster exits as they happen (also what every MemoryPostgresProcess on this server reports). */
  get exits(): Observable<PostmasterExit> {
    return this.exitSubject.asObservable();
  }

  // ---------------------------------------------------------------- what tests do

  /** Commits `bytes` of WAL on a running primary; streaming replicas receive it at once. Returns the new flush LSN. */
  write(bytes = 1000): number {
    this.network.tick();
    const cluster = this.cluster;
    if (!this.postmaster || !cluster) throw new Error(`${this.name}: cannot write, postgres is not running`);
    if (this.postmaster.inRecovery) throw new Error(`${this.name}: cannot execute INSERT in a read-only transaction`);
    if (this.postmaster.frozen) throw new Error(`${this.name}: cannot write, postgres is frozen`);
    cluster.walEnd += bytes;
    cluster.replayLsn = cluster.walEnd;
    cluster.commitAt = cluster.replayedCommitAt = this.network.clock.now();
    this.network.settle();
    return cluster.walEnd;
  }

  /** The postmaster dies without being asked (SIGKILL by default, or an exit code with its last log lines). */
  crash(options: { signal?: string; code?: number; log?: string[] } = {}): void {
    if (!this.postmaster) throw new Error(`${this.name}: nothing to crash, postgres is not running`);
    this.log.push(...(options.log ?? []));
    const code = options.code ?? null;
    this.endPostmaster({
      code,
      signal: code === null ? (options.signal ?? 'SIGKILL') : null,
      requested: false,
      fenced: false,
    });
  }

  /** Like SIGSTOP: queries fail with a timeout (or hang until `thaw`), the server stops streaming and accepting connections. */
  freeze(mode: 'timeout' | 'hang' = 'timeout'): void {
    if (!this.postmaster) throw new Error(`${this.name}: nothing to freeze, postgres is not running`);
    this.postmaster.frozen = mode;
    this.network.settle();
  }

  thaw(): void {
    if (this.postmaster) this.postmaster.frozen = null;
    this.releaseWaiters();
    this.network.settle();
  }

  /** The next `times` runs of `operation` fail with `message` (for `start`: the postmaster's last log lines, e.g. a FATAL). */
  failNext(operation: FailableOperation, message: string, times = 1): void {
    for (let i = 0; i < times; i++) this.failures.push({ operation, message });
  }

  /** Another process holds the port: every start fails ("could not bind ... Address already in use") until `releasePort`. */
  takePort(): void {
    this.portTaken = true;
  }
  releasePort(): void {
    this.portTaken = false;
  }

  /** While false, no other server can connect to this one nor this one to them (replication, clones, rewind). */
  setReachable(reachable: boolean): void {
    this.reachable = reachable;
    this.network.settle();
  }

  /** Stops (or lets again) this replica's WAL receiver take WAL from its upstream: it lags while paused. */
  setStreamingPaused(paused: boolean): void {
    this.streamingPaused = paused;
    this.network.settle();
  }

  /** pg_wal_replay_pause() / pg_wal_replay_resume() on a running replica. */
  setReplayPaused(paused: boolean): void {
    if (!this.postmaster?.inRecovery) throw new Error(`${this.name}: recovery is not in progress`);
    this.postmaster.replayPaused = paused;
    this.network.settle();
  }

  /** Checks fence deadlines against the clock (every adapter call does this too). */
  tick(): void {
    this.network.tick();
  }

  // ---------------------------------------------------------------- for the adapters

  /** Throws the next injected failure of `operation`, if any. */
  takeFailure(operation: FailableOperation, error: (message: string) => Error): void {
    const index = this.failures.findIndex((failure) => failure.operation === operation);
    if (index >= 0) throw error(this.failures.splice(index, 1)[0].message);
  }

  /** The postmaster starts and runs recovery; throws PostgresCommandError with its log tail when it exits instead. */
  startPostmaster(): number {
    if (this.postmaster)
      throw new Error(`${this.name}: a postmaster (pid ${this.postmaster.pid}) already runs on ${this.dataDirPath}`);
    const pid = this.network.nextPid();
    const line = (text: string) => this.log.push(`${postgresLogTime(this.network.clock.now())} [${pid}] ${text}`);
    const fail = (lines: string[]): never => {
      lines.forEach(line);
      line('LOG:  database system is shut down');
      throw new PostgresCommandError('postgres', 1, this.log.slice(-8).join('\n'));
    };
    line(
      `LOG:  starting PostgreSQL ${Math.floor(this.serverVersion / 10000)}.${this.serverVersion % 10000} (simulated)`,
    );
    const cluster = this.cluster;
    if (!cluster) fail([`FATAL:  "${this.dataDirPath}" is not a valid data directory`]);
    this.takeFailure('start', (message) => fail(message.split('\n')));
    if (this.portTaken) {
      fail([
        `LOG:  could not bind IPv4 address "${this.host}": Address already in use`,
        `HINT:  Is another postmaster already running on port ${this.port}? If not, wait a few seconds and retry.`,
        `WARNING:  could not create listen socket for "${this.host}"`,
        'FATAL:  could not create any TCP/IP sockets',
      ]);
    }
    const c = cluster!;
    const settings = c.settings;
    // The newest timeline's history file reaches a replica from its upstream: with none answering, it starts and waits.
    const upstream = c.standbySignal && settings?.upstream ? this.network.connect(this, settings.upstream) : null;
    const fork =
      upstream?.cluster && upstream.cluster.systemIdentifier === c.systemIdentifier
        ? forkBeforeCheckpoint(c.checkpoint.timeline, c.checkpoint.lsn, upstream.cluster)
        : null;
    if (fork !== null) {
      fail([
        `FATAL:  requested timeline ${upstream!.cluster!.timeline} is not a child of this server's history`,
        `DETAIL:  Latest checkpoint is at ${formatLsn(c.checkpoint.lsn)} on timeline ${c.checkpoint.timeline}, but in the history of the requested timeline, the server forked off from that timeline at ${formatLsn(fork)}.`,
        `LOG:  startup process (PID ${pid + 1}) exited with exit code 1`,
        'LOG:  aborting startup due to startup process failure',
      ]);
    }
    // Anything but a clean primary shutdown means recovery first; a primary ends it with a checkpoint.
    const recovering = c.clusterState !== 'shut down';
    line(`LOG:  database system was ${recovering ? 'interrupted' : 'shut down'} at ${formatLsn(c.checkpoint.lsn)}`);
    const parameters = renderParameters(settings?.parameters ?? {});
    this.postmaster = {
      pid,
      startedAt: this.network.clock.now(),
      inRecovery: c.standbySignal,
      parameters,
      pendingRestart: {},
      upstream: c.standbySignal ? (settings?.upstream ?? null) : null,
      slotName: c.standbySignal ? (settings?.slotName ?? null) : null,
      fenceDeadline: null,
      streaming: false,
      received: false,
      latestEndLsn: null,
      replayPaused: false,
      frozen: null,
    };
    if (c.standbySignal) {
      c.clusterState = 'in archive recovery';
    } else {
      c.replayLsn = c.walEnd;
      if (recovering) this.checkpointNow(); // end-of-recovery checkpoint
      c.clusterState = 'in production';
    }
    line(`LOG:  database system is ready to accept ${c.standbySignal ? 'read-only ' : ''}connections`);
    this.network.settle();
    return pid;
  }

  /**
   * A requested stop. Smart and fast stops of a primary let its walsenders send everything first and
   * write a shutdown checkpoint; a replica keeps its last restartpoint. Immediate stops write nothing
   * (pg_control keeps saying the server runs). A frozen postmaster ignores the signal and is SIGKILLed
   * when the stop escalates.
   */
  stopPostmaster(mode: StopMode): void {
    const postmaster = this.postmaster;
    const cluster = this.cluster;
    if (!postmaster || !cluster) return;
    if (postmaster.frozen) {
      this.endPostmaster({ code: null, signal: 'SIGKILL', requested: true, fenced: false });
      return;
    }
    if (mode !== 'immediate') {
      if (postmaster.inRecovery) {
        restartpoint(cluster);
        cluster.clusterState = 'shut down in recovery';
      } else {
        this.checkpointNow();
        cluster.clusterState = 'shut down';
      }
      this.network.settle();
    }
    this.endPostmaster({ code: 0, signal: null, requested: true, fenced: false });
  }

  /** SIGKILL of the postmaster and its children: pg_control keeps saying it runs. */
  killPostmaster(): void {
    if (this.postmaster) this.endPostmaster({ code: null, signal: 'SIGKILL', requested: false, fenced: false });
  }

  /** The fence's dead man's switch: immediate shutdown (SIGKILL for a frozen postmaster) once the clock reaches the deadline. */
  checkFence(now: number): void {
    const postmaster = this.postmaster;
    if (!postmaster || postmaster.fenceDeadline === null || now < postmaster.fenceDeadline) return;
    this.log.push(`${postgresLogTime(now)} [${postmaster.pid}] LOG:  received immediate shutdown request`);
    this.endPostmaster({
      code: postmaster.frozen ? null : 0,
      signal: postmaster.frozen ? 'SIGKILL' : null,
      requested: false,
      fenced: true,
    });
  }

  /** End of recovery after `pg_ctl promote`: replays what was received, then writes on timeline + 1. */
  promote(): void {
    endRecovery(this.cluster!, this.postmaster!);
    this.network.settle();
  }

  /** CHECKPOINT on a primary (a record in the WAL), a restartpoint on a replica. */
  checkpointNow(): void {
    if (this.postmaster?.inRecovery) restartpoint(this.cluster!);
    else writeCheckpoint(this.cluster!);
    this.network.settle();
  }

  /** SIGHUP: reloadable parameters and the upstream apply now; the others wait for a restart. */
  reload(): void {
    const settings = this.cluster?.settings;
    if (!settings) return;
    reloadSettings(this.postmaster!, settings);
    this.network.settle();
  }

  /** One settling step of a running replica's WAL receiver and startup process; true when something moved. */
  receiveFromUpstream(): boolean {
    const postmaster = this.postmaster;
    const cluster = this.cluster;
    if (!postmaster?.inRecovery || !cluster) return false;
    const upstream =
      postmaster.upstream && !this.streamingPaused && !postmaster.frozen
        ? this.network.connect(this, postmaster.upstream)
        : null;
    return receiveAndReplay(cluster, postmaster, upstream?.cluster ?? null);
  }

  /** pg_stat_replication: the servers streaming from this one now. */
  replicationConnections(): ReplicationConnection[] {
    return replicationRows(
      this.network.downstreamsOf(this),
      this.postmaster?.parameters.synchronous_standby_names ?? '',
    );
  }

  /** Resolves while the server answers; for a server frozen in 'hang' mode, once it is thawed (rejects if it dies first). */
  whenResponsive(): Promise<void> {
    if (this.postmaster?.frozen !== 'hang') return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  private releaseWaiters(error?: Error): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) {
      if (error) waiter.reject(error);
      else waiter.resolve();
    }
  }

  private endPostmaster(exit: Omit<PostmasterExit, 'pid' | 'lastLog'>): void {
    const pid = this.postmaster!.pid;
    this.postmaster = null;
    this.releaseWaiters(new Error('Connection terminated unexpectedly'));
    this.network.settle();
    // As the real adapter: the log's last lines come with an exit that carries an error code.
    const lastLog = exit.code ? this.log.slice(-6).join(' | ') : '';
    this.exitSubject.next(lastLog ? { pid, ...exit, lastLog } : { pid, ...exit });
  }
}
