import { FailoverRequest } from '../dcs/dcs.port';
import { LONG_ACTION_STATES, POSTMASTER_UP_STATES } from '../postgresql/postgres-states';
import { downstreamMembers, nodeToFollow } from './cascade';
import { HaSnapshot, isNoFailover, upstreamOf } from './cluster-snapshot';
import { Decision, HaAction } from './decision';
import { bootstrap, continueBootstrap } from './decide-bootstrap';
import { goodCandidates, pendingFailover, unhealthyCluster } from './leader-race';
import { promoteAfterDrain } from './read-pool';
import { recover, rejoinBackoff } from './recover';
import { followRemote, remotePrimary } from './standby-cluster';
import { scheduledActionDue } from './scheduled-restart';
import { quorumAllowsCandidates } from './sync/sync-eligibility';
import { isUnresponsive } from './unresponsive';

export type { Decision, HaAction, Need } from './decision';

/**
 * The HA decision, one pure function over a snapshot (reference-behavior section 3.2).
 *
 * Lock operations and peer probes are I/O whose outcome changes the decision, so decide() may
 * answer `{ need }` first; the loop performs that one operation, adds its outcome to the snapshot
 * and calls decide() again. The final answer is the verdict (the reference's wording, so log
 * searches keep working) and the actions to carry out.
 */
/** How many loop_waits a replica behind the leader's timeline may fail to stream before it rewinds. */
const STUCK_REPLICA_CYCLES = 3;

export function decide(s: HaSnapshot): Decision {
  const { local, cluster, config } = s;
  if (!cluster) return dcsUnreachable(s);

  const leaderName = cluster.leader?.value ?? null;
  const iHoldLeaderKey = leaderName === local.name;
  const paused = config.pause;
  const pgUp = POSTMASTER_UP_STATES.includes(local.pgState);
  const pgIsPrimary = local.pgState === 'running' && local.sample !== null && !local.sample.inRecovery;

  if (local.busy || LONG_ACTION_STATES.includes(local.pgState)) {
    // A long action never stops the lock holder from keeping its lock.
    if (iHoldLeaderKey && !s.lockResult) return { need: 'refreshLock' };
    return { verdict: `${local.busy ?? local.pgState} in progress`, actions: [] };
  }

  if (isUnresponsive(local.unresponsiveMs, config.postgres_unresponsive_timeout))
    // An agent started beside the hung server has no reading of it: pg_control tells a primary all the same.
    return unresponsive(s, iHoldLeaderKey, pgIsPrimary || local.dataDir.clusterState === 'in production');

  if (local.bootstrapping) return continueBootstrap(s, pgIsPrimary);

  if (local.dataDir.state !== 'initialized' && !pgUp) {
    if (iHoldLeaderKey)
      return {
        verdict: 'released leader key voluntarily as data dir empty and currently leader',
        actions: [{ type: 'releaseLock' }],
      };
    if (paused) return { verdict: 'running with empty data directory', actions: [] };
    return bootstrap(s);
  }

  const initialize = cluster.initialize;
  const sysid = local.dataDir.systemIdentifier ?? local.sample?.systemIdentifier;
  if (initialize && sysid && initialize !== sysid) {
    return {
      verdict: `system ID mismatch: this node's data directory has ${sysid}, the cluster's initialize key says ${initialize}; refusing to run it (consider reinitialize)`,
      actions: [],
    };
  }
  const adopt: HaAction[] = initialize === null && !leaderName && !paused ? [{ type: 'writeInitialize' }] : [];

  if (!pgUp) return withPrefix(adopt, recover(s));
  if (local.pgState !== 'running' || !local.sample) return { verdict: 'waiting for PostgreSQL status', actions: adopt };

  if (!leaderName) return withPrefix(adopt, unhealthyCluster(s, pgIsPrimary));
  // As Patroni: whoever holds the lock publishes the configuration it runs with when the DCS holds none.
  if (iHoldLeaderKey) return withPrefix(cluster.config ? [] : [{ type: 'writeConfig' }], leaderCycle(s, pgIsPrimary));
  return followLeader(s, leaderName, pgIsPrimary);
}

/**
 * The running server answers nothing. The lock holder ends its term: it kills the server (a stopped
 * or stuck process keeps its clients' connections but acknowledges nothing), then releases the lock
 * so another node takes over at once instead of after ttl. A primary without the lock (its agent
 * came back after the key ran out) is killed too: should it wake, it would take writes beside the
 * new leader, and only a fence would stop it. A replica's hang the health checks already report; a
 * paused cluster is left to its operator.
 */
function unresponsive(s: HaSnapshot, iHoldLeaderKey: boolean, lastSeenPrimary: boolean): Decision {
  const { local, config } = s;
  const what = `PostgreSQL has not answered for ${Math.floor(local.unresponsiveMs / 1000)} s (postgres_unresponsive_timeout ${config.postgres_unresponsive_timeout} s)`;
  if (config.pause || !(iHoldLeaderKey || lastSeenPrimary)) return { verdict: what, actions: [] };
  // One kill for both; the holder then lets the key go.
  const release: HaAction[] = iHoldLeaderKey ? [{ type: 'releaseLock' }] : [];
  return {
    verdict: `${what}: ${iHoldLeaderKey ? 'killing it and releasing the leader key' : 'killing it, a primary without the leader key'}`,
    actions: [{ type: 'killPostgres' }, ...release],
  };
}

function withPrefix(prefix: HaAction[], decision: Decision): Decision {
  if ('need' in decision || prefix.length === 0) return decision;
  return { verdict: decision.verdict, actions: [...prefix, ...decision.actions] };
}

/**
 * A leader that lost the DCS (reference demote 'offline'): stopped, then started again read-only with no
 * upstream, so it serves reads and cannot take writes nor diverge; it follows a leader once the DCS answers.
 */
const OFFLINE_DEMOTE: HaAction = { type: 'demote', mode: 'fast', restart: true, upstream: null };

function dcsUnreachable(s: HaSnapshot): Decision {
  const pgIsPrimary = s.local.pgState === 'running' && s.local.sample !== null && !s.local.sample.inRecovery;
  if (!s.config.pause && pgIsPrimary) {
    const failsafe = failsafeWhileDcsDown(s);
    if (failsafe) return failsafe;
    return {
      verdict: 'demoted self because DCS is not accessible and I was a leader',
      actions: [OFFLINE_DEMOTE],
    };
  }
  // A replica that accepted a failsafe leader keeps its slots in step with the positions it sent (as the reference).
  const keepSlots: HaAction[] =
    s.config.use_slots && s.failsafeLeader && s.failsafeLeader !== s.local.name
      ? [{ type: 'serveDownstreams', members: [] }]
      : [];
  return { verdict: 'DCS is not accessible', actions: keepSlots };
}

/**
 * Failsafe mode (reference `check_failsafe_topology`): the leader, listed in `/failsafe`, asks every
 * other listed member to accept it; if all do, it stays primary instead of demoting. Null when the
 * mode does not apply, so the leader demotes as without it.
 */
function failsafeWhileDcsDown(s: HaSnapshot): Decision | null {
  const members = s.failsafeMembers;
  if (!s.config.failsafe_mode || s.local.leadership !== 'leader' || !members || !Object.hasOwn(members, s.local.name))
    return null;
  if (!s.failsafeResult) return { need: 'failsafeRound' };
  if (s.failsafeResult.accepted) {
    return {
      verdict: 'continue to run as a leader because failsafe mode is enabled and all members are accessible',
      // As the reference: its slots stay kept meanwhile, so that no consumer's WAL piles up until the DCS is back.
      actions: [
        { type: 'holdInFailsafe', until: s.failsafeResult.validUntil },
        ...(s.config.use_slots ? [{ type: 'keepSlotsInFailsafe' } as const] : []),
      ],
    };
  }
  return {
    verdict: 'demoted self because DCS is not accessible and I was a leader',
    actions: [OFFLINE_DEMOTE],
    notes: s.failsafeResult.refusals,
  };
}

/** This node's name is in the leader key (reference 3.4, "I hold L"). */
function leaderCycle(s: HaSnapshot, pgIsPrimary: boolean): Decision {
  const { local, config } = s;
  if (config.pause && !pgIsPrimary) {
    return {
      verdict: 'removed leader lock because postgres is not running as primary',
      actions: [{ type: 'releaseLock' }],
    };
  }
  if (!s.lockResult) return { need: 'refreshLock' };
  // The read answered but the refresh did not: the DCS went away within the cycle, and failsafe mode decides.
  if (s.lockResult === 'dcs_unreachable') return dcsUnreachable(s);
  const remote = remotePrimary(config.standby_cluster);
  if (s.lockResult === 'refreshed') {
    const failover = pendingFailover(s);
    if (failover && (pgIsPrimary || remote)) {
      const manual = manualFailoverAsLeader(s, failover);
      if (manual) return manual;
    }
    const ahead = scheduledFailoverAhead(s);
    if (pgIsPrimary && ahead) {
      return {
        verdict: `Awaiting ${ahead.kind} at ${s.cluster!.failover!.value.scheduled_at} (in ${Math.ceil((ahead.at - s.now) / 1000)} seconds)`,
        actions: [{ type: 'leaderDuties' }, { type: 'wakeAt', at: ahead.at }],
      };
    }
    if (remote && pgIsPrimary && !remote.host) {
      // Reference `demote-cluster` with no host: keep the lock (no member of this cluster races), restart restoring from the archive.
      if (!config.standby_cluster?.restore_command) {
        return {
          verdict: `no action. I am (${local.name}), the leader with the lock; standby_cluster names neither a host nor a restore_command, so there is nothing to follow`,
          actions: [{ type: 'leaderDuties' }],
        };
      }
      return {
        verdict: 'converting to a standby cluster: demoting self to restore WAL from the archive (demote-cluster)',
        actions: [{ type: 'demoteToArchive', remote }],
      };
    }
    if (remote && pgIsPrimary) {
      // Reference `demote-cluster`: a fast stop, then pg_rewind onto the remote and stream from it, keeping the lock.
      return {
        verdict: `converting to a standby cluster: demoting self to follow the remote primary ${remote.host}:${remote.port}`,
        actions: [{ type: 'demote', mode: 'fast', restart: true, upstream: remote }],
      };
    }
    if (remote)
      return {
        verdict: `no action. I am (${local.name}), the standby leader with the lock`,
        actions: [...followRemote(s, remote), { type: 'leaderDuties' }],
      };
    if (pgIsPrimary && local.watchdogFailed && !config.pause) {
      // The lock goes once PostgreSQL is down (the next cycle's release): no other node promotes before then.
      return {
        verdict: 'Demoting self because watchdog could not be activated',
        actions: [{ type: 'demote', mode: 'immediate', restart: true, upstream: null }],
      };
    }
    if (pgIsPrimary)
      return {
        verdict: `no action. I am (${local.name}), the leader with the lock`,
        actions: [{ type: 'leaderDuties' }],
      };
    // Tagged nofailover after it won the race (its promotion interrupted): it hands the lock on instead.
    if (isNoFailover(local.tags))
      return {
        verdict: 'released leader key because I am not allowed to promote (nofailover)',
        actions: [{ type: 'releaseLock' }],
      };
    if (local.watchdogFailed && !config.pause)
      return {
        verdict: 'Not promoting self because watchdog could not be activated',
        actions: [{ type: 'releaseLock' }],
      };
    return { verdict: 'promoted self to leader because I had the session lock', actions: [promoteAfterDrain(s)] };
  }
  if (pgIsPrimary) {
    if (config.pause)
      return { verdict: 'continue to run as primary after failing to update leader lock in DCS', actions: [] };
    return {
      verdict: 'demoted self because failed to update leader lock in DCS',
      actions: [{ type: 'demote', mode: 'immediate', restart: true, upstream: null }],
    };
  }
  return { verdict: 'not promoting because failed to update leader lock in DCS', actions: [] };
}

/** Another node holds the lock: be its replica (reference 3.4 `follow`). */
function followLeader(s: HaSnapshot, leaderName: string, pgIsPrimary: boolean): Decision {
  const { local, cluster, config } = s;
  const upstream = upstreamOf(cluster!.members.find((m) => m.name === leaderName));
  if (pgIsPrimary) {
    if (config.pause) return { verdict: 'continue to run as primary without lock', actions: [] };
    return {
      verdict: 'demoting self because I do not have the lock and I was a leader',
      actions: [{ type: 'demote', mode: 'immediate', restart: true, upstream }],
    };
  }
  const target = upstreamOf(nodeToFollow(cluster!, local, leaderName));
  const via = target && target.name !== leaderName ? ` through ${target.name}` : '';
  const following = `no action. I am (${local.name}), a secondary, and following a leader (${leaderName})${via}`;
  const leaderTimeline = cluster!.members.find((m) => m.name === leaderName)?.data.timeline ?? 0;
  const ownTimeline = local.sample?.timeline ?? 0;
  if (upstream && local.upstream === leaderName && local.sample && ownTimeline > 0 && ownTimeline < leaderTimeline) {
    // WAL past the point where the cluster's history ends our timeline can never be followed: rewind now, not after a wait.
    const switchLsn = Number(cluster!.history?.value?.find((entry) => Number(entry[0]) === ownTimeline)?.[1] ?? NaN);
    if (Number.isFinite(switchLsn) && local.sample.walPosition > switchLsn) {
      const retry = rejoinBackoff(s, leaderName);
      if (retry) return retry;
      return {
        verdict: `my WAL goes on past the point where the cluster's history ends timeline ${ownTimeline}: rejoining ${leaderName} through pg_rewind`,
        actions: [{ type: 'rewindReplica', upstream }],
      };
    }
  }
  const stuckFor = local.notStreamingSince > 0 ? s.now - local.notStreamingSince : 0;
  // Longer than ttl: a leader that died would have lost its key by then, so this one is alive.
  const stuckLimitMs = Math.max(STUCK_REPLICA_CYCLES * config.loop_wait, config.ttl) * 1000;
  if (upstream && local.upstream === leaderName && stuckFor > stuckLimitMs && ownTimeline < leaderTimeline) {
    // Replication cannot continue from a timeline the leader forked off before our position: rewind.
    const retry = rejoinBackoff(s, leaderName);
    if (retry) return retry;
    return {
      verdict: `not streaming from ${leaderName} for ${Math.round(stuckFor / 1000)} s and behind its timeline ${leaderTimeline}: rejoining through pg_rewind`,
      actions: [{ type: 'rewindReplica', upstream }],
    };
  }
  const downstreams: HaAction[] = config.use_slots
    ? [{ type: 'serveDownstreams', members: downstreamMembers(cluster!, local.name, false) }]
    : [];
  if (target && local.upstream !== target.name)
    return { verdict: following, actions: [{ type: 'follow', upstream: target }, ...downstreams] };
  return { verdict: following, actions: downstreams };
}

/** The leader's side of a switchover or manual failover (reference 3.6 step 2 and 3.7). */
function manualFailoverAsLeader(s: HaSnapshot, failover: FailoverRequest): Decision | null {
  const { local, config } = s;
  const kind = failover.leader ? 'switchover' : 'manual failover';
  const cleanUp = (verdict: string, fate: 'skipped' | 'expired' = 'skipped'): Decision => ({
    verdict,
    actions: [{ type: 'clearFailover', fate }, { type: 'leaderDuties' }],
  });
  if (failover.scheduled_at) {
    const at = Date.parse(failover.scheduled_at);
    if (Number.isNaN(at)) return cleanUp(`Invalid scheduled_at ${failover.scheduled_at}, cleaning up`);
    if (config.pause) return null;
    if (scheduledActionDue(at, s.now, config.loop_wait, s.wallJumpMs) === 'stale')
      return cleanUp(`Found a stale ${kind} value, cleaning up: ${failover.scheduled_at}`, 'expired');
  }
  if (failover.member === local.name) return cleanUp(`I am already the leader, no need to ${kind}`);
  if (failover.leader && failover.leader !== local.name)
    return cleanUp(`${kind}: leader name does not match: ${failover.leader} != ${local.name}`);
  if (config.pause && !failover.member)
    return cleanUp(`${kind} is possible only to a specific candidate in a paused state`);
  if (!s.peers) return { need: 'probePeers' };
  // A switchover to a site waits for nobody else: the leader steps down only if a member of that site can take over.
  const site = failover.member ? undefined : failover.site;
  const candidates = goodCandidates(s, failover.member ?? null, site).length;
  if (candidates === 0 || !quorumAllowsCandidates(s, candidates, Boolean(failover.member))) {
    return cleanUp(`${kind}: no healthy members found${site ? ` in site ${site}` : ''}, ${kind} is not possible`);
  }
  return { verdict: `${kind}: demoting myself`, actions: [{ type: 'demoteGraceful' }] };
}

/** A scheduled switchover still ahead: the lock holder waits and wakes exactly on time. */
function scheduledFailoverAhead(s: HaSnapshot): { at: number; kind: string } | null {
  const value = s.cluster?.failover?.value;
  if (!value?.scheduled_at || s.config.pause) return null;
  const at = Date.parse(value.scheduled_at);
  return at > s.now ? { at, kind: value.leader ? 'switchover' : 'manual failover' } : null;
}
