import { Observable } from 'rxjs';
import type { TermRelease } from '../common/term-release';
import type { DynamicConfig } from '../config/config.types';

/**
 * The distributed configuration store, in Patroni's model and key layout under
 * `/<namespace>/<scope>/` (reference-behavior section 2). Adapters: etcd v3 and in-memory.
 *
 * Timing contract: every method resolves or rejects within `retryTimeout` ms; a rejection
 * is a `DcsError`. Nothing retries behind the caller's back past that deadline.
 */
export interface Dcs {
  /** Reads the whole cluster prefix in one request. */
  read(): Promise<ClusterView>;

  /**
   * The cluster as this node's watch keeps it, without a request, while the adapter can vouch for
   * it; otherwise a read(). Not linearizable: it may trail the store by the watch's delay, so a lock
   * holder that does not find its own hold there reads before it concludes the lock is lost.
   */
  readCached(): Promise<ClusterView>;

  /**
   * Emits once per change under the cluster prefix (after the change is applied). A broken or
   * cancelled watch is re-established by the adapter, which then emits `{ key: null }` so the
   * subscriber knows to re-read everything.
   */
  changes(): Observable<DcsChange>;

  /** Creates `leader` = own name on own lease if absent. Returns the new lock lease, or null if someone else holds it. */
  acquireLeader(): Promise<LockLease | null>;
  /** Refreshes the lease and re-asserts `leader` = own name. Null when the lock is held by someone else or gone. */
  refreshLeader(): Promise<LockLease | null>;
  /**
   * The lock holder's refresh of this HA cycle, begun with the cycle's read: the lease keepalive goes out beside it,
   * and refreshLeader later in the same cycle waits only for what is left of its answer. With
   * etcd slow to answer, a refresh sent after the read came one answer later, and a new leader's fence ran out
   * while its promotion was under way (issue 35's switchover storm). The lock's end still counts from the send.
   */
  startLeaderRefresh(): void;
  /** Deletes `leader` only if it holds own name. Returns whether it was deleted. */
  releaseLeader(): Promise<boolean>;
  /** Writes `leader` = own name unconditionally (post-bootstrap, as the reference does). */
  forceLeader(): Promise<LockLease>;
  /**
   * How the fence can end this node's term without the agent (revoke the lease the leader key is on),
   * or null when the fence cannot reach this store itself (in-memory, or etcd over gRPC only).
   */
  termRelease(): TermRelease | null;

  /**
   * Writes `members/<name>` on own lease. Skips the write when the value did not change. `renewLease`: keep the lease
   * alive now whatever its age, so that the key outlives this call by a whole ttl (a stopped leader's last write).
   */
  touchMember(data: MemberData, options?: { renewLease?: boolean }): Promise<void>;

  /** `create`: create-only write of `initialize` (the bootstrap race), false if it exists. Otherwise plain put. */
  initialize(value: string, create: boolean): Promise<boolean>;
  /** Deletes `initialize` (a failed bootstrap gives the race back). */
  cancelInitialization(): Promise<void>;

  /** Compare-and-set on mod revision when `expectedRevision` is given, `'absent'` for create-only. */
  setConfig(config: DynamicConfig, expectedRevision?: Revision): Promise<boolean>;
  setFailover(request: FailoverRequest, expectedRevision?: Revision): Promise<boolean>;
  setHistory(history: HistoryEntry[]): Promise<void>;
  /**
   * Writes `/sync` (null deletes it) by compare-and-set on its mod revision (`'absent'`: create-only),
   * and only while `leader` holds own name: a node that lost the lock can never change which standbys
   * count as synchronous (safety rule 5). Returns the key's new revision (`'absent'` once deleted), or
   * null when a compare failed and nothing was written.
   */
  setSync(state: SyncState | null, expectedRevision: Revision): Promise<Revision | null>;
  setStatus(status: LeaderStatus): Promise<void>;
  /** Writes `/failsafe` (null deletes it). */
  setFailsafe(members: Record<string, string> | null): Promise<void>;

  /** Re-grants the lease with a new TTL (seconds), e.g. after `ttl` changed in `/config`. */
  setTtl(ttlSeconds: number): Promise<void>;
  /** The deadline of every later call, retries included, e.g. after `retry_timeout` changed in `/config`. */
  setRetryTimeout(retryTimeoutMs: number): void;

  /**
   * Stops watches and revokes own lease (member key and, if held, leader key go with it). With
   * `keepLease` the lease is left to expire: the member key stays one ttl, as the reference leaves it.
   */
  close(options?: { keepLease?: boolean }): Promise<void>;
}

/** An etcd mod_revision as a decimal string; `'absent'` means "the key must not exist". */
export type Revision = string | 'absent';

export class DcsError extends Error {
  override readonly name = 'DcsError';
}

export interface LockLease {
  /**
   * Until when this node may act as leader, on the monotonic clock (TimerClock.monotonic): the moment
   * the refresh was *sent* plus ttl. The lease on the server cannot expire earlier, so this errs on the
   * safe side; a jump of the wall clock changes nothing of it.
   */
  validUntil: number;
}

export interface DcsChange {
  /** Key relative to the cluster prefix (`leader`, `members/n1`, ...), or null: re-read everything. */
  key: string | null;
  type: 'put' | 'delete' | 'resync';
}

export interface Versioned<T> {
  value: T;
  modRevision: string;
}

/** One consistent read of the cluster prefix. */
export interface ClusterView {
  /** Leader key: the name, with its revision; null when the key is absent. */
  leader: Versioned<string> | null;
  /** Member keys sorted by name. */
  members: Member[];
  /** `initialize`: '' during the bootstrap race, then the system identifier; null when absent. */
  initialize: string | null;
  config: Versioned<DynamicConfig> | null;
  failover: Versioned<FailoverRequest> | null;
  history: Versioned<HistoryEntry[]> | null;
  sync: Versioned<SyncState> | null;
  status: Versioned<LeaderStatus> | null;
  /** `/failsafe`: the members (name → API URL) a leader must reach to stay primary while the DCS is down. */
  failsafe: Versioned<Record<string, string>> | null;
  /** Store revision of the read. */
  revision: string;
}

export interface Member {
  name: string;
  data: MemberData;
  modRevision: string;
}

/** The member key's JSON value, keys in Patroni's order (reference-behavior 2.2). */
export interface MemberData {
  conn_url: string;
  api_url: string;
  state: string;
  role: string;
  /** What Patroni peers read as a Patroni release (see memberData). */
  version: string;
  /** Stator's own version: present only in keys Stator wrote. */
  stator_version?: string;
  /** The member's `site` setting (Patroni's unreleased site awareness), absent when it has none. */
  site?: string;
  /** The runtime of the Stator agent that wrote the key (`node 24.21.0`). */
  stator_runtime?: string;
  tags?: Record<string, unknown>;
  pending_restart?: boolean;
  pending_restart_reason?: Record<string, { old_value: string; new_value: string }>;
  xlog_location?: number;
  replay_lsn?: number;
  receive_lsn?: number;
  replication_state?: string;
  timeline?: number;
  scheduled_restart?: Record<string, unknown>;
  pause?: boolean;
  [extra: string]: unknown;
}

// The `/config` document is the configuration's type (config/config.types.ts); the DCS stores it as it is.
export type { DynamicConfig };

/** `/failover`: `{}` means no request. */
export interface FailoverRequest {
  leader?: string;
  member?: string;
  scheduled_at?: string;
  /** A switchover to any member of this site (Patroni's site awareness); only without `member`. */
  site?: string;
}

/** `/history` entry: [timeline, lsn, reason, iso timestamp, new leader]. */
export type HistoryEntry = [number, number, string, string?, string?];

/** `/sync` as the reference writes it: `{"leader":"a","quorum":0,"sync_standby":"b,c"}` (names sorted). */
export interface SyncState {
  leader: string | null;
  quorum?: number;
  sync_standby: string | null;
}

/** `/status`: the leader's last known WAL position and slot positions. */
export interface LeaderStatus {
  optime?: number;
  slots?: Record<string, number>;
  retain_slots?: string[];
  /** The leader's site, as Patroni's site-aware branch writes it: failover prefers a member of this site. */
  current_site?: string;
}
