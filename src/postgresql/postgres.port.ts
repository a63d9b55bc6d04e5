import { Observable } from 'rxjs';
import { BootstrapMethod, CustomMethod } from '../config/config.types';
import { PermanentSlot, SlotMatcher } from '../config/slots-config';
import type { TermRelease } from '../common/term-release';
import type { FenceJournalEntry, FenceWatchdog, FenceWatchdogState } from './fence/fence-protocol';

export type { FenceJournalEntry, FenceWatchdog, FenceWatchdogState };

/** A leader's term as the fence may end it: how to release the lease, and how long a lost agent may take to come back. */
export interface LeaderTerm {
  release: TermRelease;
  graceMs: number;
}

/** Where a replica streams from, or where a clone/rewind reads from. */
export interface UpstreamNode {
  name: string;
  host: string;
  port: number;
}

/** What `postgresql.conf`, `pg_hba.conf` and the recovery signal files should say for the next start or reload. */
export interface PostgresSettings {
  /** Replica of `upstream` (standby.signal, primary_conninfo), or primary (no signal file). */
  role: 'primary' | 'replica';
  upstream?: UpstreamNode | null;
  /** Physical slot on the upstream to stream from (`primary_slot_name`), when use_slots. */
  slotName?: string | null;
  /** Effective server parameters from local config merged with `/config`; Stator adds its own (port, listen, hba, wal_log_hints...). */
  parameters: Record<string, string | number | boolean>;
  /** A primary's archive recovery first (a custom bootstrap's `recovery_conf`): these settings and recovery.signal. */
  recovery?: Record<string, string | number | boolean>;
  /** A custom bootstrap's `keep_existing_recovery_conf`: its recovery settings in postgresql.auto.conf stay for the first start. */
  keepExistingRecoveryConf?: boolean;
  /** pg_hba.conf lines (local `postgresql.pg_hba`, else `/config`'s); absent: Stator's default lines, then `bootstrapHba`. */
  pgHba?: string[];
  /** `bootstrap.pg_hba`: added after Stator's default lines when no pg_hba is set. */
  bootstrapHba?: string[];
  /** pg_ident.conf lines (local, else `/config`'s); absent or empty: the local file's, else an empty file. */
  pgIdent?: string[];
  /** A replica's extra recovery settings (`recovery_conf`: restore_command, recovery_min_apply_delay...). */
  recoveryConf?: Record<string, string | number | boolean>;
}

/** What the data directory and pg_control say, read without a running server. */
export interface DataDirInfo {
  /** `missing` or `empty`: nothing to start; `initialized`: has PG_VERSION and global/pg_control. */
  state: 'missing' | 'empty' | 'initialized';
  systemIdentifier?: string;
  /** pg_controldata "Database cluster state", e.g. `in production`, `shut down`, `shut down in recovery`, `in crash recovery`, `in archive recovery`. */
  clusterState?: string;
  /** "Latest checkpoint's TimeLineID". */
  timeline?: number;
  /** "Latest checkpoint location" as an integer LSN. */
  checkpointLsn?: number;
  /** "Latest checkpoint's REDO WAL file": after a clean shutdown, the segment that holds the shutdown checkpoint. */
  redoWalFile?: string;
  /** standby.signal present. */
  standbySignal: boolean;
}

export interface PostmasterExit {
  pid: number;
  code: number | null;
  signal: string | null;
  /** True when Stator asked for the stop (stop/restart), false for a crash or a fence stop. */
  requested: boolean;
  /** True when the fence stopped it because the primary lease deadline passed. */
  fenced: boolean;
  /** The end of PostgreSQL's own log when it exited without being asked to, so the cause reaches the agent's log. */
  lastLog?: string;
}

export type StopMode = 'smart' | 'fast' | 'immediate';

/** A step a stop took past its deadline: an immediate shutdown, then SIGKILL of the postmaster. */
export type StopEscalation = 'immediate' | 'sigkill';

/** A custom replica method, named as in `create_replica_methods`. */
export interface ReplicaMethod extends CustomMethod {
  name: string;
}

/**
 * PostgreSQL binaries and processes on this node (initdb, pg_basebackup, postgres under its fence,
 * pg_rewind, pg_controldata). Every method runs the binaries as the unprivileged OS user when the
 * agent runs as root. Errors are `PostgresCommandError` with the command's stderr tail.
 */
export interface PostgresProcess {
  inspectDataDir(): Promise<DataDirInfo>;
  initdb(): Promise<void>;
  /**
   * Runs a custom bootstrap (`bootstrap.<method>`) as the reference does: the command split as a shell
   * would, `--scope` and `--datadir` appended (unless `no_params`) with the section's other keys as
   * `--key=value`; it must leave a cluster in the data directory. Then recovery.signal and
   * standby.signal are removed unless `keep_existing_recovery_conf` (the first start writes
   * `recovery_conf` with its own recovery.signal).
   */
  customBootstrap(method: BootstrapMethod): Promise<void>;
  /**
   * Once, after the first start of a cluster this node bootstrapped (initdb or custom bootstrap), like
   * Patroni's post_bootstrap: creates the replication role, or updates its password and attributes.
   * Idempotent. Replicas can clone only after it.
   */
  postBootstrap(): Promise<void>;
  /** pg_basebackup (fast checkpoint, stream WAL) from `source` into an empty data directory. */
  basebackup(source: UpstreamNode): Promise<void>;
  /**
   * A custom replica method (`postgresql.<name>`) as the reference calls it: the data directory emptied
   * unless `keep_data`, then the command with `--scope`, `--role=replica`, `--datadir` and `--connstring`
   * (the replication login to `source`, its password in PGPASSFILE; empty without a source) unless
   * `no_params`, and the section's other keys as `--key=value`. A failure empties the directory again
   * unless `keep_data`, and throws PostgresCommandError with the exit code.
   */
  createReplicaWith(method: ReplicaMethod, source: UpstreamNode | null): Promise<void>;
  /** pg_rewind against a running `source`. Resolves 'not_needed' when the timelines did not diverge. Requires a clean shutdown: call `crashRecovery` first when the cluster state is not `shut down`. */
  rewind(source: UpstreamNode): Promise<'rewound' | 'not_needed'>;
  /** Single-user mode start and clean exit, so pg_control says `shut down` (needed by pg_rewind after a crash). */
  crashRecovery(): Promise<void>;
  removeDataDir(): Promise<void>;
  /** Writes the dynamic configuration into the data directory's `patroni.dynamic.json`, as Patroni caches it there. */
  saveDynamicConfigCache(config: Record<string, unknown>): Promise<void>;
  /** The data directory's `patroni.dynamic.json`, null when there is none; throws when it holds no JSON mapping. */
  readDynamicConfigCache(): Promise<Record<string, unknown> | null>;
  /** Writes postgresql.conf, pg_hba.conf and standby.signal (or removes it) for `settings`. */
  configure(settings: PostgresSettings): Promise<void>;
  /**
   * Starts the postmaster under its fence. Resolves once it accepts connections (recovery finished
   * for a primary, consistent state for a replica); rejects when it exits or `timeoutMs` passes.
   */
  start(timeoutMs: number): Promise<{ pid: number }>;
  /** Connects to a fence left by an earlier agent. Returns the postmaster pid if one runs, else null. */
  adopt(): Promise<{ pid: number } | null>;
  /**
   * Stops the postmaster; resolves when it has exited. Escalates fast → immediate → SIGKILL after `timeoutMs`,
   * telling `onEscalation` of each step as it is taken.
   */
  stop(mode: StopMode, timeoutMs: number, onEscalation?: (step: StopEscalation) => void): Promise<void>;
  /** SIGHUP to the postmaster. */
  reload(): Promise<void>;
  /**
   * Runs `archiveCommand` (PostgreSQL's `archive_command`, placeholders replaced as the archiver does) for WAL
   * file `walFile` of the stopped server, as the OS user, within `timeoutMs`; throws when it fails.
   */
  archiveWalFile(archiveCommand: string, walFile: string, timeoutMs: number): Promise<void>;
  /** Promotes a replica; resolves when the server has left recovery. */
  promote(timeoutMs: number): Promise<void>;
  /** Postmaster exits, crashes included, as they happen (not polled). */
  exits(): Observable<PostmasterExit>;
  /**
   * Arms the fence's dead man's switch: unless re-armed, the fence stops the postmaster (immediate
   * shutdown) at `deadlineEpochMs`. Called after each successful lock refresh of a primary. The handle
   * remembers it: a primary (no standby.signal) it starts later runs under a fence armed with it from its
   * first instant (a lock holder's start that completes while its agent is frozen or cut off is fenced all the same).
   * With a `term`, the fence also ends the leader's term itself when this agent is gone for `graceMs`, and
   * after its deadline: PostgreSQL stopped and confirmed gone, then the lease revoked.
   * With a `watchdog`, the fence holds that device open and pets it with this arm; without, it closes it.
   */
  armFence(deadlineEpochMs: number, term?: LeaderTerm, watchdog?: FenceWatchdog): void;
  /**
   * The steps a fence took on its own since the last call (the file is consumed): what the next agent
   * records in the node's log.
   */
  takeFenceJournal(): FenceJournalEntry[];
  /** Disarms the switch (the node is no longer primary). */
  disarmFence(): void;
  /** The fence as this handle last set it, from memory (self-diagnosis): no round trip to the fence. */
  fenceState(): FenceState;
  postmasterPid(): number | null;
  /**
   * SIGKILL of the postmaster and every process it started, for a server that stopped answering
   * (SIGKILL ends stopped processes too). Resolves once they are all gone; rejects past its deadline.
   */
  killProcessTree(): Promise<void>;
  /** Whether `source` accepts a connection as the superuser now (1 s): checked before anything is stopped or removed to follow it. */
  upstreamReachable(source: UpstreamNode): Promise<boolean>;
  /**
   * CHECKPOINT on `source` as the superuser (5 s): it flushes WAL and logs the running transactions, so
   * a standby rewound from it becomes consistent and readable now, not at the source's next standby
   * snapshot (up to 15 s later on an idle server).
   */
  checkpointOn(source: UpstreamNode): Promise<void>;
  /**
   * Copies logical slot `name`'s on-disk state from `source` (the primary) into this data directory,
   * as the reference does before PostgreSQL 16, which cannot create a logical slot on a standby. The
   * server loads it at its next start. Refused while the slot needs WAL from before `oldestWal` (this
   * server does not hold it, so the copy could never decode): its consumer has to move it on first.
   */
  copyLogicalSlot(source: UpstreamNode, name: string, oldestWal: number): Promise<void>;
  /** Releases local handles (fence socket); the postmaster and the fence keep running. */
  detach(): Promise<void>;
}

/** See PostgresProcess.fenceState. */
export interface FenceState {
  /** A fence runs this handle's postmaster and its socket is open. */
  connected: boolean;
  /** Epoch ms at which the fence stops the postmaster unless re-armed; null when disarmed (or not connected). */
  deadline: number | null;
  /** The hardware watchdog as the fence last reported it; null or absent when no fence reported one. */
  watchdog?: FenceWatchdogState | null;
}

export class PostgresCommandError extends Error {
  override readonly name = 'PostgresCommandError';
  constructor(
    readonly command: string,
    readonly exitCode: number | null,
    readonly stderrTail: string,
  ) {
    super(`${command} failed (exit ${exitCode}): ${stderrTail}`);
  }
}

/** One standby connected to this server (pg_stat_replication). */
export interface ReplicationConnection {
  usename: string;
  application_name: string;
  client_addr: string | null;
  state: string;
  sync_state: string;
  sync_priority: number;
  /** Positions this standby reported as written, flushed and replayed; null until it reported one. */
  write_lsn: number | null;
  flush_lsn: number | null;
  replay_lsn: number | null;
}

/** One reading of the running server, taken by a single query. */
export interface PostgresSample {
  inRecovery: boolean;
  serverVersion: number;
  /** e.g. `2024-08-28 19:39:26.352526+00:00` */
  postmasterStartTime: string;
  timeline: number;
  /** Primary: pg_current_wal_flush_lsn. Replica: max(received, replayed). */
  walPosition: number;
  receivedLsn: number | null;
  replayedLsn: number | null;
  replayedTimestamp: string | null;
  replayPaused: boolean;
  /** `streaming` when the WAL receiver streams, else null. */
  replicationState: string | null;
  /** pg_stat_wal_receiver.latest_end_lsn (the upstream's position as last reported), replicas only. */
  latestEndLsn: number | null;
  replication: ReplicationConnection[];
  /** The values in force (`current_setting`), which a reload may not have reached yet. */
  synchronousStandbyNames: string;
  synchronousCommit: string;
  systemIdentifier: string;
  /** Parameters whose changed value waits for a restart (pg_settings.pending_restart). */
  pendingRestart: Record<string, { old_value: string; new_value: string }>;
  /** The physical replication slots, and whether a standby streams from each (absent: not read). */
  physicalSlots?: PhysicalSlotState[];
  /** The logical replication slots (absent: not read). */
  logicalSlots?: LogicalSlotState[];
}

export interface PhysicalSlotState {
  name: string;
  active: boolean;
  /** wal_status `lost`: the WAL it reserved is gone (max_slot_wal_keep_size), it can never be streamed from again. */
  lost?: boolean;
  /** Whether it holds an xmin (hot_standby_feedback of a standby that streamed from it). */
  xmin?: boolean;
  restartLsn?: number | null;
}

/** The slots as one reading found them; a kind absent was not read. */
export interface SlotReading {
  physical?: PhysicalSlotState[];
  logical?: LogicalSlotState[];
}

export interface LogicalSlotState {
  name: string;
  active: boolean;
  database: string;
  plugin: string;
}

/** The slots one synchronisation created and dropped. */
export interface SlotChanges {
  created: string[];
  dropped: string[];
  /** Of the dropped, the wanted ones whose wal_status was `lost`: created again, as Patroni 4.1 does. */
  lost?: string[];
}

/** SQL against the local server (node-postgres). Every call has a statement timeout. */
export interface PostgresQuery {
  sample(): Promise<PostgresSample>;
  checkpoint(): Promise<void>;
  /**
   * Creates the physical slots that are missing and drops the other inactive physical slots, except
   * those `keep` covers (`ignore_slots`). Says which it created and dropped. With `known` (the slots
   * as a reading just found them) nothing is sent when they are already as wanted.
   */
  syncPhysicalSlots(names: string[], keep?: SlotMatcher[], known?: PhysicalSlotState[]): Promise<SlotChanges>;
  /** `restart_lsn` of each of these physical slots that exists and holds one. */
  physicalSlotPositions(names: string[]): Promise<Record<string, number>>;
  /**
   * Moves each of these slots forward to its position (pg_replication_slot_advance; on a standby no
   * further than its replay). A slot already there, missing, in use or holding an xmin is left alone.
   */
  advanceSlots(positions: Record<string, number>): Promise<void>;
  /**
   * Drops those of these slots of this type that nothing streams from (with `holdingXmin`: only
   * those that hold an xmin); says which it dropped. A slot in use is left for a later call.
   */
  dropIdleSlots(names: string[], type: 'physical' | 'logical', holdingXmin?: boolean): Promise<string[]>;
  /** Where the oldest WAL segment this server still holds begins (pg_wal), whatever its timeline. */
  oldestWalPosition(): Promise<number>;
  /** `confirmed_flush_lsn` of each of these logical slots that exists here. */
  logicalSlotPositions(names: string[]): Promise<Record<string, number>>;
  /** Creates the missing logical slots, each in its database with its plugin (a primary only); says which it created. */
  createLogicalSlots(slots: PermanentSlot[]): Promise<string[]>;
  /**
   * Moves each of these logical slots that exists here forward to its position, from its own database
   * (PostgreSQL requires it); on a standby no further than its replay. A slot in use is left alone.
   */
  advanceLogicalSlots(slots: PermanentSlot[], positions: Record<string, number>): Promise<void>;
  /** For tests and the demo: run one statement. */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}
