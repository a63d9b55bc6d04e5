import type { TimerClock } from '../../common/clock';
import { PostgresSettings, UpstreamNode } from '../postgres.port';
import { TimelineSwitch } from './wal-history';

/* The state of a simulated server (MemoryPostgresServer), shared by the in-memory adapters. */

/** pg_controldata's "Database cluster state" values the simulation uses. */
export type ClusterState = 'shut down' | 'shut down in recovery' | 'in production' | 'in archive recovery';

export interface CheckpointRecord {
  lsn: number;
  timeline: number;
}

/** What the data directory holds: survives postmaster restarts, copied by a clone. */
export interface MemoryCluster {
  systemIdentifier: string;
  clusterState: ClusterState;
  standbySignal: boolean;
  timeline: number;
  history: TimelineSwitch[];
  /** End of the WAL on disk: flushed on a primary, received on a replica. */
  walEnd: number;
  replayLsn: number;
  /** pg_control's latest checkpoint (a restartpoint on a replica). */
  checkpoint: CheckpointRecord;
  /** Every checkpoint record in the WAL, oldest first: what restartpoints and pg_rewind start from. */
  checkpointRecords: CheckpointRecord[];
  /** Commit time of the newest transaction in the WAL, and of the newest one replayed. */
  commitAt: number | null;
  replayedCommitAt: number | null;
  slots: Set<string>;
  /** What `configure` last wrote (postgresql.conf, primary_conninfo, standby.signal). */
  settings: PostgresSettings | null;
  /** postBootstrap ran on this cluster: the replication role exists, so pg_basebackup may connect. */
  replicationRole: boolean;
}

/** A running postmaster. */
export interface MemoryPostmaster {
  pid: number;
  startedAt: number;
  inRecovery: boolean;
  /** Parameters in effect (applied at start, reloadable ones again at reload). */
  parameters: Record<string, string>;
  pendingRestart: Record<string, { old_value: string; new_value: string }>;
  upstream: UpstreamNode | null;
  slotName: string | null;
  /** The fence's dead man's switch on the network clock's monotonic reading, null when disarmed. */
  fenceDeadline: number | null;
  streaming: boolean;
  /** The WAL receiver has received something since this start (pg_last_wal_receive_lsn is not null). */
  received: boolean;
  latestEndLsn: number | null;
  replayPaused: boolean;
  /** SIGSTOPped: queries answer with a timeout error ('timeout') or never until thawed ('hang'). */
  frozen: 'timeout' | 'hang' | null;
}

/** Operations a test can make fail with `failNext`. */
export type FailableOperation =
  | 'initdb'
  | 'customBootstrap'
  | 'postBootstrap'
  | 'basebackup'
  | 'createReplica'
  | 'rewind'
  | 'crashRecovery'
  | 'start'
  | 'promote'
  | 'sample'
  | 'checkpoint'
  | 'syncPhysicalSlots'
  | 'query';

export interface MemoryPostgresServerOptions {
  name: string;
  /** Address in the network (`UpstreamNode.host`); default: the name. */
  host?: string;
  port?: number;
  /** Default 150010. */
  serverVersion?: number;
  /** Only for messages. Default `/var/lib/postgresql/<name>`. */
  dataDir?: string;
  /** `usename` of this server's connections upstream, in the upstream's pg_stat_replication. Default `replicator`. */
  replicationUser?: string;
}

/** Parameters whose change waits for a restart (context `postmaster`); the others apply at reload. */
export const RESTART_PARAMETERS = new Set([
  'max_connections',
  'shared_buffers',
  'max_wal_senders',
  'max_replication_slots',
  'max_worker_processes',
  'wal_level',
  'max_prepared_transactions',
  'max_locks_per_transaction',
  'hot_standby',
  'wal_log_hints',
  'port',
  'listen_addresses',
  'shared_preload_libraries',
  'track_commit_timestamp',
  'archive_mode',
]);
/** Sizes of the WAL records the simulation writes besides `write(bytes)`. */
export const CHECKPOINT_RECORD_BYTES = 120;
export const END_OF_RECOVERY_RECORD_BYTES = 40;

/** Values as `current_setting` shows them: booleans on/off, numbers bare. */
export function renderParameters(parameters: Record<string, string | number | boolean>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(parameters).map(([name, value]) => [
      name,
      typeof value === 'boolean' ? (value ? 'on' : 'off') : String(value),
    ]),
  );
}

/** `2026-01-01 00:00:00 UTC`, as log_line_prefix's `%t` writes it. */
export function postgresLogTime(epochMs: number): string {
  return new Date(epochMs)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC');
}

/**
 * What a simulated server asks of the network it belongs to (MemoryPostgresNetwork implements it for its
 * MemoryPostgresServer): generic in the server so that the server does not import the network back.
 */
export interface ServerNetwork<Server> {
  readonly clock: TimerClock;
  connect(from: Server, node: Pick<UpstreamNode, 'host' | 'port'>): Server | null;
  downstreamsOf(upstream: Server): Server[];
  nextPid(): number;
  newSystemIdentifier(): string;
  tick(): void;
  settle(): void;
}
