import { UpstreamNode } from '../postgresql/postgres.port';

/** What decide() may ask the loop to do first: I/O whose outcome changes the decision. */
export type Need = 'refreshLock' | 'acquireLock' | 'raceInitialize' | 'probePeers' | 'failsafeRound';

export type HaAction =
  | { type: 'initdb' }
  /** Build the data directory from `source`, or without any member by a `no_leader` replica method. */
  | { type: 'clone'; source: UpstreamNode | null }
  | { type: 'startPrimary' }
  /** Start read-only, streaming from `upstream` (or from nobody while there is no leader). */
  | { type: 'startReplica'; upstream: UpstreamNode | null }
  /** A former primary joins `upstream`: pg_rewind (reclone when that fails), then start as its replica. */
  | { type: 'rejoin'; upstream: UpstreamNode; useRewind: boolean }
  /** Promote after `drainMs` (0: at once), the rest of the load balancer drain since this node left the read pool. */
  | { type: 'promote'; drainMs: number }
  /** Point a running replica at a new upstream (primary_conninfo + reload). */
  | { type: 'follow'; upstream: UpstreamNode }
  /** Keep this replica's slots as slot-plan.ts plans them; `members`: those that cascade from it (what the verdict tells). */
  | { type: 'serveDownstreams'; members: string[] }
  /** Stop a primary that must not be one; restart it read-only following `upstream` unless `restart` is false. */
  | { type: 'demote'; mode: 'immediate' | 'fast'; restart: boolean; upstream: UpstreamNode | null }
  /**
   * The reference's `demote-cluster` into an archive-only standby cluster: fast stop keeping the lock, archive
   * the shutdown checkpoint's WAL file, start again restoring from `remote`'s archive as the standby leader.
   */
  | { type: 'demoteToArchive'; remote: UpstreamNode }
  /** A replica that cannot follow `upstream`'s timeline: stop, pg_rewind, start again (only if `upstream` answers). */
  | { type: 'rewindReplica'; upstream: UpstreamNode }
  /** Won the initialize race of a standby cluster: clone the remote primary, stream from it, take the lock. */
  | { type: 'bootstrapStandbyLeader'; remote: UpstreamNode }
  /** Holds the lock in a standby cluster: the role says standby_leader. */
  | { type: 'becomeStandbyLeader' }
  /**
   * `demote`: the server is no primary any more, its role says so first: `crashed` (failing over after a crash)
   * or `failed_start` (the reference's post_recover, which also fires on_role_change demoted).
   */
  | { type: 'releaseLock'; demote?: 'crashed' | 'failed_start' }
  | { type: 'finishBootstrap' }
  | { type: 'abandonBootstrap' }
  | { type: 'writeInitialize' }
  /** The lock holder finds no `/config` (a cluster adopted from an existing data directory): it writes its own. */
  | { type: 'writeConfig' }
  /** Clears `/failover`; `fate` says what became of a scheduled request, for the schedule timeline. */
  | { type: 'clearFailover'; fate?: 'skipped' | 'expired' }
  /** Publish optime and history, keep members' slots: what the lock holder does each cycle. */
  | { type: 'leaderDuties' }
  /** Switchover: checkpoint, fast stop, then release the lock for the candidate. */
  | { type: 'demoteGraceful' }
  /** Run the next cycle at this instant (a scheduled operation is due). */
  | { type: 'wakeAt'; at: number }
  /** SIGKILL of a hung server and every process it started (the lock is released only after). */
  | { type: 'killPostgres' }
  /** The DCS is down but every member accepted this leader: it stays leader, its fence armed, until `until`. */
  | { type: 'holdInFailsafe'; until: number }
  /**
   * The failsafe leader keeps its slots from the last view read (nothing written to the DCS): a member
   * cascading from another at the WAL position its failsafe answer carried.
   */
  | { type: 'keepSlotsInFailsafe' };

/** `notes`: lines the reference logs on the way to its verdict (why another node is healthier), logged before it. */
export type Decision = { need: Need } | { verdict: string; actions: HaAction[]; notes?: string[] };
