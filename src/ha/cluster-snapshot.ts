import { EffectiveDynamicConfig, NodeTags } from '../config/config.types';
import { ClusterView, Member } from '../dcs/dcs.port';
import { DataDirInfo, PostgresSample, UpstreamNode } from '../postgresql/postgres.port';
import { PostgresStateName } from '../postgresql/postgres-states';
import { RoleName } from './role.machine';

/** How the last background task ended: a retry after a failure waits a backoff. */
export interface EndedTask {
  name: string;
  error: string | null;
  endedAt: number | null;
  failuresInRow: number;
}

/** What the HA loop remembers for `primary_race_backoff` (primary-race-backoff.ts). */
export interface RaceBackoffState {
  /** Epoch ms of the first cycle that found no leader key (0: there is a leader). */
  noLeaderSince: number;
  /** This node's WAL position as the previous cycle read it; null before any reading. */
  previousWalPosition: number | null;
}

/** What this node knows about itself at the start of an HA cycle. */
export interface LocalView {
  name: string;
  tags: NodeTags;
  /** Top-level state of the postgres machine. */
  pgState: PostgresStateName;
  /** Name of the long action in progress (`promote`, `restart`, `clone`...), null when idle. */
  busy: string | null;
  role: RoleName;
  leadership: 'leader' | 'follower';
  dataDir: DataDirInfo;
  /** Latest reading of the running server; null while it is not running. */
  sample: PostgresSample | null;
  /** The node this replica is configured to stream from. */
  upstream: string | null;
  /** Epoch ms since when this running replica has not been streaming; 0 while it streams. */
  notStreamingSince: number;
  /** This node won the initialize race and has not finished bootstrapping. */
  bootstrapping: boolean;
  /** Error of the last PostgreSQL action, if it failed. */
  lastError: string | null;
  /** Starts that failed in a row (0 once PostgreSQL runs) and when the latest was asked for (epoch ms). */
  failedStarts: number;
  lastStartAt: number | null;
  /** Clones that failed in a row, and when the latest was asked for: the next one waits a backoff. */
  failedClones: number;
  lastCloneAt: number | null;
  /** How long the running server has not answered (ms); 0 while it answers or is not running. */
  unresponsiveMs: number;
  /** A replica method marked `no_leader` (a restore from backup) can build this node without any member. */
  canCloneWithoutLeader: boolean;
  /** The last background procedure that ended (task machine): its name, error, end and failures in a row. */
  lastTask: EndedTask | null;
  /** Epoch ms since when this running replica answers 503 on the replica checks because it is about to be primary (read-pool.ts); null otherwise. */
  readPoolWithdrawnAt: number | null;
  /** Watchdog mode `required` and none usable: why. Such a node takes no lock and promotes nothing. */
  watchdogFailed?: string | null;
  /** This node's `site` setting, absent when it has none. */
  site?: string;
}

/** A peer's status document as read over its API during the leader race (2 s timeout). */
export interface PeerReading {
  name: string;
  reachable: boolean;
  role?: string;
  /** `xlog.location` for a primary; max(received, replayed) for a replica. */
  walPosition?: number;
  isPrimary?: boolean;
  timeline?: number;
  tags?: Record<string, unknown>;
  /** `watchdog_failed` in its status document: it requires a watchdog it cannot have, so it is no candidate. */
  watchdogFailed?: boolean;
  /** `site` in its status document (Patroni's site awareness), absent when it has none. */
  site?: string;
}

/** Everything decide() looks at: pure data, no handles. */
export interface HaSnapshot {
  /** The wall clock: scheduled actions are compared with it. Every instant of `local` is expressed on it (snapshot-of.ts). */
  now: number;
  /** How far the wall clock jumped since the previous cycle, beyond the time that passed (wall-clock-jumps.ts); 0 or absent when it did not. */
  wallJumpMs?: number;
  config: EffectiveDynamicConfig;
  /** null when the DCS could not be read within retry_timeout. */
  cluster: ClusterView | null;
  dcsError: string | null;
  local: LocalView;
  /** Outcome of the lock operation decide() asked for in this cycle. */
  /** `dcs_unreachable`: the refresh got no answer and failsafe mode may keep the lock (LeaderLock.refresh). */
  lockResult?: 'acquired' | 'not_acquired' | 'refreshed' | 'refresh_failed' | 'dcs_unreachable';
  initializeResult?: 'won' | 'lost';
  peers?: PeerReading[];
  /** `/failsafe` as last read from the DCS: the members a leader must reach while the DCS is down. */
  failsafeMembers?: Record<string, string> | null;
  /** The leader whose failsafe call this node accepted within the last ttl. */
  failsafeLeader?: string | null;
  /** Outcome of the failsafe round decide() asked for: every member accepted, and until when that holds. */
  failsafeResult?: { accepted: boolean; validUntil: number; refusals: string[] };
  /** What `primary_race_backoff` looks at (primary-race-backoff.ts). */
  raceBackoff?: RaceBackoffState;
}

export function upstreamOf(member: Member | undefined): UpstreamNode | null {
  if (!member) return null;
  try {
    const url = new URL(member.data.conn_url);
    return { name: member.name, host: url.hostname, port: Number(url.port || 5432) };
  } catch {
    return null;
  }
}

/**
 * Whether a leader's member key says its server has finished promoting: a primary (or a standby leader) whose first
 * checkpoint after the promotion is done. Before that, pg_rewind against it compares with a timeline that has not
 * forked yet, finds "no rewind required", and a former primary would replay WAL the new leader never had.
 */
export function promotedAndCheckpointed(member: Member | undefined): boolean {
  return saysPromoted(member) && member!.data.checkpoint_after_promote !== false;
}

/** Whether a leader's member key says its server runs as a primary (or a standby leader), checkpointed since or not. */
export function saysPromoted(member: Member | undefined): boolean {
  return member !== undefined && ['primary', 'master', 'standby_leader'].includes(member.data.role ?? '');
}

/** `cluster.timeline` as the reference computes it: last history timeline + 1, 1 for `[]`, 0 when missing. */
export function clusterTimeline(cluster: ClusterView): number {
  const history = cluster.history?.value;
  if (!history) return 0;
  if (history.length === 0) return 1;
  return Number(history[history.length - 1][0]) + 1;
}

export function isTruthyTag(value: unknown): boolean {
  return value === true || (typeof value === 'string' && ['true', 'yes', 'on', '1'].includes(value.toLowerCase()));
}

/** `failover_priority` as the reference derives it: 0 when nofailover, else the tag (default 1). */
export function failoverPriority(tags: Record<string, unknown> | undefined): number {
  if (!tags) return 1;
  if (isTruthyTag(tags.nofailover)) return 0;
  const priority = Number(tags.failover_priority ?? 1);
  return Number.isFinite(priority) ? priority : 1;
}

export function isNoFailover(tags: Record<string, unknown> | undefined): boolean {
  if (!tags) return false;
  if (tags.nofailover !== undefined) return isTruthyTag(tags.nofailover);
  return tags.failover_priority !== undefined && failoverPriority(tags) <= 0;
}
