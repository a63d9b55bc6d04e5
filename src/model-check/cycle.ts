import { HaSnapshot } from '../ha/cluster-snapshot';
import { probeTargets, weighedReadings } from '../ha/failsafe/probe-targets';
import { Decision, HaAction } from '../ha/decision';
import { formatStandbyNames } from '../postgresql/standby-names';
import { REAL_DECISION_CODE } from './decision-code';
import { modelSiteOf, promotionHoldForSites } from './site-rule';
import { manageSync } from './sync-duties';
import { ClusterModel, DcsRead, LOOP_WAIT_S, NODE_NAMES, strictMode } from './model';
import { Fact } from './recording';
import { DecisionMutation, Promotion } from './model-types';
import { failsafeMaskOf, failsafeRound, runsAsPrimary } from './failsafe';
import { dcsRead, peerReadings, postgresStateName, snapshotOf } from './snapshot';
import { columnsTogether } from './commit-columns';

const codeOf = (mutation?: DecisionMutation) => mutation?.code ?? REAL_DECISION_CODE;

export interface CycleOutcome {
  verdict: string;
  facts: Fact[];
  promotion: Promotion | null;
}

const indexOf = (name: string | null | undefined) =>
  name ? NODE_NAMES.indexOf(name as (typeof NODE_NAMES)[number]) : -1;

/**
 * Arms node i's fence from its lease, as LeaderLock.armFence does (the agent remembers the deadline
 * even when its fence is dead: a new postmaster's fence starts with it). A late fence's deadline
 * comes loop_wait later, past the lease's end.
 */
export function armFence(c: ClusterModel, i: number, mutation?: DecisionMutation): void {
  const n = c.nodes[i];
  const late = n.fenceLate ? LOOP_WAIT_S * 1000 : 0;
  n.fence = mutation?.noFence ? -1 : Math.max(0, n.lease - codeOf(mutation).fenceSafetyMarginMs(c.ttl) + late);
}

/**
 * LeaderLock's `serverIsPrimary`: the fence stays armed while the server runs as a primary, or is being
 * promoted (it may become one at any moment: a promotion completing after the lock was lost is stopped at
 * the deadline instead of running on without a lease until the next cycle).
 */
function fenceStaysArmed(n: ClusterModel['nodes'][number]): boolean {
  return n.pg === 'running' && (n.primary || n.op === 'promote');
}

function decideWith(s: HaSnapshot, mutation?: DecisionMutation): Decision {
  const seen = mutation?.snapshot ? mutation.snapshot(s) : s;
  const decision = codeOf(mutation).decide(seen);
  return mutation?.decision ? mutation.decision(seen, decision) : decision;
}

/**
 * One HA cycle of node i, as HaNode.cycle runs it: read the DCS, drop a lock no longer ours, ask the
 * real decide() (performing the I/O it needs against the model), carry out its actions, write the
 * member key, keep the fence. Mutates `c`.
 */
export function runCycle(c: ClusterModel, i: number, mutation?: DecisionMutation): CycleOutcome {
  const n = c.nodes[i];
  const reachable = c.quorum && !n.dcsCut;
  const facts: Fact[] = [];
  // A read taken earlier (a stale view) is decided on now; lock operations and writes meet the DCS as it is now.
  const stale = n.view ? (JSON.parse(n.view) as DcsRead) : null;
  n.view = null;
  const read = stale ?? (reachable ? dcsRead(c) : null);
  if (read) n.knownFailsafe = read.failsafeKey;
  // As readCluster: without a DCS answer the lock goes, unless failsafe mode may keep this primary (decide() asks the members).
  const failsafeMayHold = !read && c.failsafe && runsAsPrimary(n);
  if (n.leader && !failsafeMayHold && (!read || read.leaderKey !== i)) {
    n.leader = false;
    facts.push({
      stream: 'cluster',
      type: 'leader.lost',
      node: i,
      cause: reachable ? 'leader key is not ours' : 'DCS is not accessible',
    });
  }
  let snapshot = snapshotOf(c, i, stale);
  let decision = decideWith(snapshot, mutation);
  for (let step = 0; 'need' in decision && step < 4; step++) {
    snapshot = fulfil(c, i, snapshot, decision.need, facts, mutation);
    decision = decideWith(snapshot, mutation);
  }
  if ('need' in decision) throw new Error(`decide() still needs ${decision.need}`);
  let promotion: Promotion | null = null;
  for (const action of decision.actions) {
    // `/sync` is written by compare-and-set on the revision read: after a stale read that changed since, the write fails.
    const syncMoved = stale !== null && JSON.stringify(stale.sync) !== JSON.stringify(c.sync);
    if (action.type === 'promote') {
      // SyncReplication.beforePromote's write failed: the promotion is postponed to the next cycle.
      if (syncMoved && c.mode !== 'off' && c.mode !== 'quorum') continue;
      const failover = codeOf(mutation).pendingFailover(snapshot);
      promotion = {
        node: i,
        manual: failover !== null,
        forced: failover !== null && !failover.leader,
        paused: snapshot.config.pause,
        raced: snapshot.lockResult === 'acquired',
      };
    }
    carryOut(c, i, action, snapshot, facts, syncMoved, mutation);
  }
  if (reachable) {
    // As memberData: xlog_location and timeline only while the server runs.
    const running = postgresStateName(n) === 'running';
    n.member = { running, primary: running && n.primary, wal: running ? n.wal : 0, timeline: running ? n.timeline : 0 };
    n.memberLease = c.ttl * 1000;
  }
  if (n.leader && n.lease > 0) armFence(c, i, mutation);
  else if (!fenceStaysArmed(n)) n.fence = -1;
  return { verdict: decision.verdict, facts, promotion };
}

function fulfil(
  c: ClusterModel,
  i: number,
  s: HaSnapshot,
  need: string,
  facts: Fact[],
  mutation?: DecisionMutation,
): HaSnapshot {
  const n = c.nodes[i];
  const reachable = s.cluster !== null && c.quorum && !n.dcsCut;
  switch (need) {
    case 'refreshLock':
      // LeaderLock.refresh with keepWhenUnanswered: failsafe mode on a primary keeps the lock through an unanswered refresh.
      if (!(c.quorum && !n.dcsCut) && c.failsafe && runsAsPrimary(n)) return { ...s, lockResult: 'dcs_unreachable' };
      if (reachable && c.leaderKey === i) {
        n.lease = c.keyLease = c.ttl * 1000;
        n.leader = true;
        armFence(c, i, mutation);
        return { ...s, lockResult: 'refreshed' };
      }
      if (n.leader)
        facts.push({ stream: 'cluster', type: 'leader.lost', node: i, cause: 'failed to update leader lock in DCS' });
      n.leader = false;
      return { ...s, lockResult: 'refresh_failed' };
    case 'acquireLock':
      if (reachable && c.leaderKey === -1) {
        c.leaderKey = i;
        n.lease = c.keyLease = c.ttl * 1000;
        n.leader = true;
        armFence(c, i, mutation);
        facts.push({ stream: 'cluster', type: 'leader.acquired', node: i, cause: 'won the leader race' });
        return { ...s, lockResult: 'acquired' };
      }
      return { ...s, lockResult: 'not_acquired' };
    case 'probePeers': {
      // The real choice of whom to probe (the members the read shows; in the race with failsafe mode, `/failsafe`'s too).
      const targets = probeTargets(s.cluster, NODE_NAMES[i], s.config.failsafe_mode);
      const readings = peerReadings(
        c,
        i,
        targets.map((t) => indexOf(t.name)),
      );
      return { ...s, peers: weighedReadings(targets, readings) };
    }
    case 'failsafeRound':
      return { ...s, failsafeResult: failsafeRound(c, i, s.failsafeMembers ?? {}) };
    default:
      throw new Error(`the model does not answer decide()'s need ${need}`);
  }
}

function carryOut(
  c: ClusterModel,
  i: number,
  action: HaAction,
  s: HaSnapshot,
  facts: Fact[],
  syncMoved: boolean,
  mutation?: DecisionMutation,
): void {
  const code = codeOf(mutation);
  const n = c.nodes[i];
  const reachable = s.cluster !== null && c.quorum && !n.dcsCut;
  switch (action.type) {
    case 'promote': {
      if (c.mode === 'quorum' && reachable) {
        // SyncReplication.beforePromote in quorum mode: no `/sync` write; ANY k of the others, k keeping the quorum's overlap.
        const members = c.sync ? [c.sync.leader, ...c.sync.standbys] : [];
        const others = members.filter((j) => j !== i);
        const count = Math.max(
          members.length - (c.sync?.quorum ?? 0) - 1 + (members.includes(i) ? 0 : 1),
          strictMode(c) ? 1 : 0,
        );
        const held = promotionHoldForSites(c, i, others, count, true);
        n.standbyNames = formatStandbyNames(held.names, held.count, true);
      } else if (c.mode !== 'off' && reachable) {
        // SyncReplication.beforePromote: `/sync` names this node first; strict keeps the other members.
        const others = c.sync ? [c.sync.leader, ...c.sync.standbys].filter((j) => j !== i) : [];
        const keep = c.mode === 'strict' ? others : [];
        c.sync = { leader: i, standbys: keep, quorum: 0 };
        const held =
          c.mode === 'strict' ? promotionHoldForSites(c, i, keep, keep.length, false) : { names: [], count: 0 };
        n.standbyNames = formatStandbyNames(
          held.names,
          c.mode === 'strict' && held.names.length === 0 ? 1 : null,
          false,
        );
      } else if (c.mode === 'off') n.standbyNames = '';
      n.op = 'promote';
      return;
    }
    case 'demote':
      // Failsafe mode kept the lock through the DCS failure until the members were asked; now it goes.
      if ((s.cluster === null || s.lockResult === 'dcs_unreachable') && n.leader) n.leader = false;
      n.role = 'demoted';
      n.op = 'demote';
      n.opRestart = action.restart;
      n.opAsPrimary = false;
      n.opUpstream = indexOf(action.upstream?.name);
      return;
    case 'demoteToArchive':
      // The model has no standby clusters; as a demotion that keeps the lock, restarting with no member upstream.
      n.role = 'demoted';
      n.op = 'demote';
      n.opRestart = true;
      n.opAsPrimary = false;
      n.opUpstream = -1;
      return;
    case 'startPrimary':
      n.op = 'start';
      n.opAsPrimary = true;
      n.opUpstream = -1;
      return;
    case 'startReplica':
    case 'rejoin':
    case 'rewindReplica':
      n.op = 'start';
      n.opAsPrimary = false;
      n.opUpstream = indexOf(action.upstream?.name);
      return;
    case 'follow':
      n.upstream = indexOf(action.upstream.name);
      if (n.role === 'demoted') n.role = 'replica';
      return;
    case 'releaseLock':
      if (action.demote && n.role === 'primary') n.role = 'demoted';
      if (reachable && c.leaderKey === i) {
        c.leaderKey = -1;
        facts.push({ stream: 'cluster', type: 'leader.released', node: i, cause: 'voluntary release' });
      }
      n.leader = false;
      if (!fenceStaysArmed(n)) n.fence = -1;
      return;
    case 'clearFailover':
      if (reachable) c.failover = null;
      return;
    case 'leaderDuties':
      if (!reachable) return;
      // publishFailsafe: every member the read shows, and this node; no key once failsafe mode is off.
      c.failsafeKey = c.failsafe ? failsafeMaskOf(s, i) : 0;
      if (n.pg !== 'running' || !n.primary) return;
      c.optime = n.wal;
      // LeaderDuties: `/status` carries this node's `site` as current_site while it leads.
      if (modelSiteOf(c, i)) c.currentSite = modelSiteOf(c, i);
      if (!syncMoved) manageSync(c, i, s.cluster!, code);
      return;
    case 'demoteGraceful':
      n.op = 'switchover';
      return;
    case 'killPostgres':
      // SIGKILL of the postmaster and every process it started: a hung server ends as a crashed one.
      if (n.pg === 'running' || n.pg === 'hung') {
        n.pg = 'crashed';
        n.primary = false;
        if (n.op !== 'switchover') n.op = 'none';
        columnsTogether(n);
      }
      return;
    case 'holdInFailsafe':
      // LeaderLock.holdInFailsafe: the lock holds until the round's start plus ttl, and the fence is armed from it.
      if (n.leader) {
        n.lease = Math.max(n.lease, action.until - s.now);
        armFence(c, i, mutation);
      }
      return;
    // becomeStandbyLeader (standby clusters, a search's setting): the model's node stays a replica whose upstream is no member.
    case 'wakeAt':
    case 'becomeStandbyLeader':
    case 'serveDownstreams':
    case 'keepSlotsInFailsafe':
    case 'writeInitialize':
    case 'writeConfig':
      return;
    default:
      throw new Error(`the model does not carry out ${action.type}`);
  }
}
