import { HaSnapshot, isNoFailover, promotedAndCheckpointed, saysPromoted, upstreamOf } from './cluster-snapshot';
import { Member } from '../dcs/dcs.port';
import { nodeToFollow } from './cascade';
import { remotePrimary } from './standby-cluster';
import { Decision } from './decision';
import {
  classifyStartFailure,
  divergedFromHistory,
  failedTaskRetryAt,
  needsRejoin,
  StartFailureKind,
  startFailureSummary,
  startRetryDelayMs,
} from './start-failure';

/** Failed starts after which the lock holder gives the lock up rather than try again (the reference's `post_recover`: one). */
const LOCK_HOLDER_START_ATTEMPTS = 1;

/** PostgreSQL is down and not paused: bring it back (reference 3.10 `recover`). */
export function recover(s: HaSnapshot): Decision {
  const { local, cluster, config } = s;
  const leaderName = cluster!.leader?.value ?? null;
  if (config.pause) {
    if (leaderName === local.name)
      return { verdict: 'removed leader lock because postgres is not running', actions: [{ type: 'releaseLock' }] };
    return { verdict: 'postgres is not running', actions: [] };
  }
  const wasPrimary = local.role === 'primary' || local.role === 'promoted' || local.role === 'demoted';
  const failure = local.failedStarts > 0 ? classifyStartFailure(local.lastError) : null;
  if (local.pgState === 'start_failed' && failure === 'still_starting') {
    const stillStarting = whileStillStarting(s, leaderName);
    if (stillStarting) return stillStarting;
  }

  if (leaderName === local.name) {
    if (!s.lockResult) return { need: 'refreshLock' };
    if (s.lockResult === 'refreshed') {
      // primary_start_timeout 0: no waiting for a crashed primary when another node can take over.
      if (wasPrimary && config.primary_start_timeout === 0 && failoverPossible(s)) {
        return {
          verdict: 'stopped PostgreSQL to fail over after a crash',
          actions: [{ type: 'releaseLock', demote: 'crashed' }],
        };
      }
      // A lock holder whose PostgreSQL failed to start hands the cluster to a node that can run.
      if (local.failedStarts >= LOCK_HOLDER_START_ATTEMPTS) {
        return {
          verdict: `removed leader key after trying and failing to start postgres (${failure}): ${startFailureSummary(local.lastError)}`,
          actions: [{ type: 'releaseLock', demote: 'failed_start' }],
        };
      }
      const wait = startBackoff(s);
      if (wait) return wait;
      if (wasPrimary && config.primary_start_timeout > 0 && !local.dataDir.standbySignal) {
        return { verdict: 'starting primary after failure', actions: [{ type: 'startPrimary' }] };
      }
      // A standby leader streams from the remote primary again.
      return {
        verdict: 'starting as readonly because i had the session lock',
        actions: [{ type: 'startReplica', upstream: remotePrimary(config.standby_cluster) }],
      };
    }
  }

  const leaderMember = cluster!.members.find((m) => m.name === leaderName);
  const upstream = leaderName && leaderName !== local.name ? upstreamOf(leaderMember) : null;
  const diverged = divergence(s, failure, wasPrimary);
  if (upstream && diverged) {
    const notYet = notPromotedYet(s, leaderMember, upstream.name);
    if (notYet) return notYet;
    const retry = rejoinBackoff(s, upstream.name);
    if (retry) return retry;
    return {
      verdict: `${diverged}; ${config.use_pg_rewind ? `running pg_rewind from ${upstream.name}` : `reinitializing from ${upstream.name}: use_pg_rewind is off`}`,
      actions: [{ type: 'rejoin', upstream, useRewind: config.use_pg_rewind }],
    };
  }
  const wait = startBackoff(s);
  if (wait) return wait;
  if (upstream && !wasPrimary) {
    // A replica starts streaming from where its tags say (cascading), as it will follow.
    return {
      verdict: 'starting as a secondary',
      actions: [{ type: 'startReplica', upstream: upstreamOf(nodeToFollow(cluster!, local, leaderName!)) }],
    };
  }
  if (upstream && wasPrimary) {
    const notYet = notPromotedYet(s, leaderMember, upstream.name);
    if (notYet) return notYet;
    const retry = rejoinBackoff(s, upstream.name);
    if (retry) return retry;
    return {
      verdict: config.use_pg_rewind
        ? `running pg_rewind from ${upstream.name}`
        : `reinitializing from ${upstream.name}: former primary and use_pg_rewind is off`,
      actions: [{ type: 'rejoin', upstream, useRewind: config.use_pg_rewind }],
    };
  }
  return { verdict: 'starting as a secondary', actions: [{ type: 'startReplica', upstream }] };
}

/**
 * How soon a node waiting for the leader's promotion looks again. Member keys do not wake the loop (every node
 * writes its own each cycle), and the wait is short (a drain, a promotion, a checkpoint): left to the next regular
 * cycle, a switchover's former primary stayed down for a whole `loop_wait` after the promotion (issue 35's storm).
 */
export const PROMOTION_WAIT_RECHECK_MS = 500;

/**
 * A former primary, or a node whose WAL diverged, joins the leader only once the leader's key says it is promoted
 * and checkpointed: pg_rewind compares pg_control timelines, which the new leader forks at its promotion (a load
 * balancer drain can hold that back after it took the lock) and writes at its first checkpoint after it. Started as a
 * replica before then, the node would replay and serve WAL the new leader never had.
 */
function notPromotedYet(s: HaSnapshot, leaderMember: Member | undefined, leaderName: string): Decision | null {
  if (promotedAndCheckpointed(leaderMember)) return null;
  return {
    verdict: saysPromoted(leaderMember)
      ? `waiting for the checkpoint after promote on ${leaderName} before pg_rewind`
      : `waiting for ${leaderName} to finish its promotion before pg_rewind`,
    actions: [{ type: 'wakeAt', at: s.now + Math.min(PROMOTION_WAIT_RECHECK_MS, s.config.loop_wait * 1000) }],
  };
}

/**
 * The last start ran out of its deadline and its postmaster still runs (reference 3.10
 * `handle_starting_instance`): the lock holder stops it when another node can take over (and lets
 * the lock go on the next cycle, the server down), else waits on; a server starting as a primary
 * without the lock is stopped; a replica goes on waiting for it. Null: the lock refresh is still to come.
 */
function whileStillStarting(s: HaSnapshot, leaderName: string | null): Decision | null {
  if (leaderName === s.local.name) {
    if (!s.lockResult) return null;
    if (s.lockResult === 'refreshed') return lockHolderStillStarting(s);
  }
  return stillStartingWithoutLock(s, leaderName);
}

function lockHolderStillStarting(s: HaSnapshot): Decision {
  if (failoverPossible(s)) {
    return {
      verdict: 'stopped PostgreSQL because of startup timeout',
      actions: [{ type: 'demote', mode: 'immediate', restart: false, upstream: null }],
    };
  }
  return {
    verdict: 'primary start has timed out, but continuing to wait because failover is not possible',
    actions: [
      s.local.dataDir.standbySignal
        ? { type: 'startReplica', upstream: remotePrimary(s.config.standby_cluster) }
        : { type: 'startPrimary' },
    ],
  };
}

function stillStartingWithoutLock(s: HaSnapshot, leaderName: string | null): Decision {
  if (!s.local.dataDir.standbySignal) {
    return {
      verdict: 'stopped PostgreSQL while starting up because leader key was lost',
      actions: [{ type: 'demote', mode: 'immediate', restart: false, upstream: null }],
    };
  }
  const leaderMember = s.cluster!.members.find((m) => m.name === leaderName);
  const upstream = leaderName && leaderName !== s.local.name ? upstreamOf(leaderMember) : null;
  return { verdict: 'still starting up as a standby', actions: [{ type: 'startReplica', upstream }] };
}

/** A rejoin that could not run (its source did not answer) is tried again after a backoff, not on the next cycle. */
export function rejoinBackoff(s: HaSnapshot, upstream: string): Decision | null {
  const at = failedTaskRetryAt(s.local.lastTask, 'rejoin', s.now, s.config.loop_wait);
  if (at === null) return null;
  return {
    verdict: `waiting ${Math.ceil((at - s.now) / 1000)} s before rejoining ${upstream} again: ${s.local.lastTask!.error}`,
    actions: [{ type: 'wakeAt', at }],
  };
}

/**
 * Why this stopped node holds WAL the leader's timeline does not contain, or null: a start cannot
 * fix that, a rewind (or a reclone) can.
 */
function divergence(s: HaSnapshot, failure: StartFailureKind | null, wasPrimary: boolean): string | null {
  const { local, cluster } = s;
  if (failure !== null && needsRejoin(failure))
    return `PostgreSQL cannot start as a replica (${failure}): ${startFailureSummary(local.lastError)}`;
  if (divergedFromHistory(local.dataDir, cluster!.history?.value)) {
    return `my timeline ${local.dataDir.timeline} goes on past the point where the cluster's history ends it`;
  }
  // A rejoin that failed (pg_rewind out of space, its source gone) left the data directory as it was: past the fork,
  // which pg_control may not show (its checkpoint comes before the fork after a crash). Started as a standby, it
  // replays its own WAL past the fork and waits for the leader's forever, never accepting a connection. (A former
  // primary rejoins anyway; this is for one that had started as a secondary before its WAL showed the fork.)
  if (!wasPrimary && local.lastTask?.name === 'rejoin' && local.lastTask.error !== null) {
    return `the last rejoin failed, so the data directory still needs one (${local.lastTask.error})`;
  }
  return null;
}

/** After failed starts, the next one waits its backoff out; the verdict says why and when. */
function startBackoff(s: HaSnapshot): Decision | null {
  const { local, config } = s;
  if (local.failedStarts === 0 || local.lastStartAt === null) return null;
  const at = local.lastStartAt + startRetryDelayMs(local.failedStarts, config.loop_wait);
  if (s.now >= at) return null;
  return {
    verdict: `waiting ${Math.ceil((at - s.now) / 1000)} s before starting PostgreSQL again: ${local.failedStarts} failed start(s) (${classifyStartFailure(local.lastError)}): ${startFailureSummary(local.lastError)}`,
    actions: [{ type: 'wakeAt', at }],
  };
}

/** Another member runs and may be promoted (the reference's `is_failover_possible`, without the probes). */
function failoverPossible(s: HaSnapshot): boolean {
  return s.cluster!.members.some(
    (member) => member.name !== s.local.name && member.data.state === 'running' && !isNoFailover(member.data.tags),
  );
}
