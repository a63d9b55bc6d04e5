import { FailoverRequest } from '../dcs/dcs.port';
import { clusterTimeline, failoverPriority, HaSnapshot, isNoFailover, PeerReading } from './cluster-snapshot';
import { Decision, HaAction } from './decision';
import { primaryRaceBackoff } from './primary-race-backoff';
import { promoteAfterDrain } from './read-pool';
import { followRemote, remotePrimary } from './standby-cluster';
import { siteChoice } from './site-preference';
import { barredBySync, isFormerSyncLeader, quorumVerdict, racePeers } from './sync/sync-eligibility';

/**
 * The leader race (reference 3.5): with no leader key, a node takes the lock only if it is the
 * healthiest member it can see, and a member it cannot see but whose key shows more WAL counts too.
 */

/** No leader key: race for it if this node is the healthiest (reference 3.5). */
export function unhealthyCluster(s: HaSnapshot, pgIsPrimary: boolean): Decision {
  const { local, cluster, config } = s;
  if (config.failsafe_mode && !pgIsPrimary && s.failsafeLeader && s.failsafeLeader !== local.name) {
    // A leader that reached this node while the DCS was down may still run: no race until its call is a ttl old.
    return {
      verdict: `following failsafe leader ${s.failsafeLeader}: it reached every member less than ttl ago`,
      actions: [],
    };
  }
  const backoff = primaryRaceBackoff(s, s.raceBackoff);
  if (backoff) return backoff;
  // The member a switchover or failover names races without asking the others, as the reference's
  // manual_failover_process_no_leader: their answers decide nothing for it, and a busy old leader may take the
  // probe's whole timeout to give one.
  const namedCandidate = pendingFailover(s)?.member === local.name;
  if (!s.peers && !config.pause && !pgIsPrimary && !namedCandidate) return { need: 'probePeers' };
  const health = healthiest(s, pgIsPrimary);
  if (health.ok) {
    if (!s.lockResult) return { need: 'acquireLock' };
    const notes = health.note ? { notes: [health.note] } : {};
    if (s.lockResult === 'acquired') {
      const cleanup: HaAction[] =
        cluster!.failover && Object.keys(cluster!.failover.value).length > 0 ? [{ type: 'clearFailover' }] : [];
      if (pgIsPrimary)
        return {
          verdict: 'acquired session lock as a leader',
          actions: [...cleanup, { type: 'leaderDuties' }],
          ...notes,
        };
      const remote = remotePrimary(config.standby_cluster);
      if (remote)
        return {
          verdict: 'promoted self to a standby leader by acquiring session lock',
          actions: [...cleanup, ...followRemote(s, remote)],
          ...notes,
        };
      // The promotion first: it runs in the background, and the request's clean-up (a DCS write) beside it. The
      // reference clears first; in a fleet's switchover storm that write took 0.3 s, every one of it a write gap.
      return {
        verdict: 'promoted self to leader by acquiring session lock',
        actions: [promoteAfterDrain(s), ...cleanup],
        ...notes,
      };
    }
    // Another node took the key first: a running primary must not go on taking writes without it (reference `follow`).
    if (pgIsPrimary && !config.pause) {
      return {
        verdict: 'demoted self after trying and failing to obtain lock',
        actions: [{ type: 'demote', mode: 'immediate', restart: true, upstream: null }],
      };
    }
    return { verdict: 'following new leader after trying and failing to obtain lock', actions: [] };
  }
  if (pgIsPrimary && !config.pause) {
    return {
      verdict: `demoting self because i am not the healthiest node: ${health.reason}`,
      actions: [{ type: 'demote', mode: 'immediate', restart: true, upstream: null }],
    };
  }
  const reason = isNoFailover(local.tags) ? 'I am not allowed to promote' : 'i am not the healthiest node';
  const notes = isNoFailover(local.tags) ? [] : [health.reason];
  return {
    verdict: `following a different leader because ${reason}`,
    actions: [],
    ...(notes.length > 0 ? { notes } : {}),
  };
}

/** `_is_healthiest_node` and its preconditions (reference 3.5). */
function healthiest(s: HaSnapshot, pgIsPrimary: boolean): { ok: boolean; reason: string; note?: string } {
  const { local, cluster, config } = s;
  const timeline = clusterTimeline(cluster!);
  const ownTimeline = local.sample?.timeline ?? 0;
  if (pgIsPrimary) {
    if (config.pause) return { ok: true, reason: 'running primary while paused' };
    return ownTimeline < timeline
      ? { ok: false, reason: `my timeline ${ownTimeline} is behind the cluster timeline ${timeline}` }
      : { ok: true, reason: 'running primary' };
  }
  const failover = pendingFailover(s);
  if (!config.pause && barredBySync(s, local.name, failover))
    return { ok: false, reason: 'I am not a synchronous standby' };
  // A failsafe leader asked only the members in /failsafe: one it never asked may not take over from it.
  const failsafe = config.failsafe_mode ? (s.failsafeMembers ?? {}) : {};
  if (Object.keys(failsafe).length > 0 && !Object.hasOwn(failsafe, local.name))
    return { ok: false, reason: 'I am not in the /failsafe key' };
  // Before the candidate's pass, as the reference: a candidate tagged nofailover after the request never leads.
  if (isNoFailover(local.tags)) return { ok: false, reason: 'nofailover' };
  // Watchdog mode `required` without a usable one: not a candidate, a manual failover's included.
  if (local.watchdogFailed && !config.pause)
    return { ok: false, reason: `Watchdog device is not usable: ${local.watchdogFailed}` };
  if (failover?.member === local.name) return { ok: true, reason: 'I am the failover candidate' };
  if (config.pause) return { ok: false, reason: 'paused' };
  if (failover?.member) {
    const candidate = s.peers?.find((p) => p.name === failover.member);
    if (candidate?.reachable && !isNoFailover(candidate.tags))
      return { ok: false, reason: `${failover.member} is the failover candidate` };
  }
  if (failover?.leader === local.name) {
    // The leader that stepped down only takes the lock back when nobody else can.
    return goodCandidates(s, null).length > 0
      ? { ok: false, reason: 'I stepped down for a switchover' }
      : { ok: true, reason: 'no other member can take over' };
  }

  const ownWal = local.sample?.walPosition ?? 0;
  const optime = cluster!.status?.value.optime ?? 0;
  // A manual failover or switchover accepts any lag, as the reference does.
  if (!failover && optime - ownWal > config.maximum_lag_on_failover) {
    return { ok: false, reason: 'My wal position exceeds maximum replication lag' };
  }
  if (config.check_timeline && ownTimeline < timeline) {
    return { ok: false, reason: `my timeline ${ownTimeline} is behind the cluster timeline ${timeline}` };
  }
  const equals: PeerReading[] = [];
  const behind: PeerReading[] = [];
  for (const peer of racePeers(s)) {
    if (peer.name === local.name || peer.name === failover?.leader) continue;
    if (!peer.reachable) {
      if (publishedAhead(s, peer.name, ownWal, ownTimeline)) {
        return {
          ok: false,
          reason: `${peer.name} does not answer, and its member key shows a wal position ahead of mine`,
        };
      }
      continue;
    }
    // A primary bars the race whatever its tags: a failsafe leader tagged nofailover after it took the lock still
    // writes (the model checker found two primaries when the tag was tested first).
    if (peer.isPrimary) return { ok: false, reason: `Primary (${peer.name}) is still alive` };
    if (isNoFailover(peer.tags) || peer.watchdogFailed) continue;
    const peerWal = peer.walPosition ?? 0;
    // In synchronous mode the former leader may still answer and be ahead of every standby: it does not bar the race.
    if (ownWal < peerWal && !isFormerSyncLeader(s, peer.name))
      return { ok: false, reason: `Wal position of ${peer.name} is ahead of my wal position` };
    if (ownWal === peerWal && peerWal > 0) equals.push(peer);
    else if (peerWal > 0 && peerWal < ownWal) behind.push(peer);
  }
  // Among the members as far along as this one, the preferred site goes first, then failover_priority.
  const noLeaderSince = s.raceBackoff?.noLeaderSince ?? 0;
  const readingsMayTrail = noLeaderSince > 0 && s.now - noLeaderSince < config.loop_wait * 1000;
  const sites = siteChoice(
    {
      ownSite: local.site,
      failover,
      currentSite: siteOf(cluster!.status?.value.current_site),
      behind,
      readingsMayTrail,
    },
    equals,
  );
  if ('defer' in sites) return { ok: false, reason: sites.defer };
  const ownPriority = failoverPriority(local.tags);
  for (const peer of sites.rivals) {
    const peerPriority = failoverPriority(peer.tags);
    if (ownPriority < peerPriority) {
      return {
        ok: false,
        reason: `${peer.name} has equally tolerable WAL position and priority ${peerPriority}, while this node has priority ${ownPriority}`,
      };
    }
  }
  const verdict = quorumVerdict(s, ownWal) ?? { ok: true, reason: 'healthiest' };
  return sites.note ? { ...verdict, note: sites.note } : verdict;
}

/** `current_site` as a site name: anything but a non-empty string means none. */
function siteOf(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * A member that does not answer the race but whose key still lives (its agent wrote it less than a
 * ttl ago) and shows more WAL than this node on a timeline no older: after a whole-cluster restart
 * it is the node that must lead once its API is up, and a leader stopped cleanly published its
 * shutdown checkpoint there. Waiting is bounded by the key's lease. A failover candidate that may
 * not lead (nofailover) bars nothing.
 */
function publishedAhead(s: HaSnapshot, name: string, ownWal: number, ownTimeline: number): boolean {
  const member = s.cluster!.members.find((m) => m.name === name);
  if (!member || isNoFailover(member.data.tags ?? {})) return false;
  const { xlog_location: wal, timeline } = member.data;
  return typeof wal === 'number' && wal > ownWal && (timeline ?? ownTimeline) >= ownTimeline;
}

/** The `/failover` request that is due now: null when there is none or it is scheduled later. */
export function pendingFailover(s: HaSnapshot): FailoverRequest | null {
  const value = s.cluster?.failover?.value;
  if (!value || (!value.leader && !value.member && !value.site)) return null;
  if (value.scheduled_at && Date.parse(value.scheduled_at) > s.now) return null;
  return value;
}

/**
 * Members that could take over from this node (reference `is_failover_possible`); `site`: only members of
 * that site (a switchover to a site: the leader steps down only if one of them can take over).
 */
export function goodCandidates(s: HaSnapshot, candidate: string | null, site?: string): PeerReading[] {
  const { local, config } = s;
  const ownWal = local.sample?.walPosition ?? 0;
  const ownTimeline = local.sample?.timeline ?? 0;
  const failover = pendingFailover(s);
  return (s.peers ?? []).filter(
    (peer) =>
      peer.name !== local.name &&
      !barredBySync(s, peer.name, failover) &&
      (candidate === null || peer.name === candidate) &&
      (site === undefined || peer.site === site) &&
      peer.reachable &&
      !isNoFailover(peer.tags) &&
      !peer.watchdogFailed &&
      ownWal - (peer.walPosition ?? 0) <= config.maximum_lag_on_failover &&
      (!config.check_timeline || (peer.timeline ?? 0) >= ownTimeline),
  );
}
