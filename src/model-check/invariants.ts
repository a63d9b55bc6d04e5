import { acceptsWrites, applyAction } from './actions';
import { Bounds, DecisionMutation, Promotion, Violation } from './model-types';
import { checkAvailability } from './availability';
import { checkHungEnded } from './hung-rule';
import { checkSiteRuleSettled } from './site-rule-settled';
import { checkSyncSettled } from './sync-settled';
import { checkRequestSettled } from './request-rules';
import { checkWatchdogSettled } from './watchdog-rule';
import {
  ClusterModel,
  holdsCommit,
  MAXIMUM_LAG_ON_FAILOVER,
  NODE_NAMES,
  reaches,
  stateKey,
  unstoppable,
} from './model';

const name = (i: number) => NODE_NAMES[i];

/**
 * 1. At most one node accepts writes while holding a valid lease, and a node whose lease expired
 * accepts none (its agent demoted it, or its fence stopped it, before). One named exemption: a node
 * neither of whose layers acts (`unstoppable`: agent crashed, frozen or the cluster paused, and fence
 * killed, late or absent) is left out, as nothing alive would stop it; `exemptWriters` counts those
 * states so that the run reports them. 3. In synchronous modes every acknowledged commit is on every node `/sync` lets be
 * promoted.
 */
export function checkState(c: ClusterModel): Violation | null {
  const writers = c.nodes.map((_, i) => i).filter((i) => acceptsWrites(c, i) && !unstoppable(c, i));
  for (const i of writers) {
    if (c.nodes[i].lease <= 0)
      return { invariant: 'lease', message: `${name(i)} accepts writes although its lease expired` };
  }
  if (writers.length > 1)
    return { invariant: 'lease', message: `${writers.map(name).join(' and ')} accept writes at once` };
  // In quorum mode a commit is on a quorum, not on every member: there the promotion itself is judged (checkPromotion).
  if ((c.mode === 'on' || c.mode === 'strict') && c.sync && c.acked?.sync) {
    for (const j of [c.sync.leader, ...c.sync.standbys]) {
      const n = c.nodes[j];
      if (!n.noFailover && !holdsCommit(c, n, c.acked)) {
        return {
          invariant: 'sync',
          message: `${name(j)} may be promoted (/sync names it) but lacks the acknowledged commit at ${c.acked.timeline}/${c.acked.wal} (it has ${n.timeline}/${n.wal})`,
        };
      }
    }
  }
  return null;
}

/** Writers that invariant 1 leaves out (agent and fence both gone), in a state; 0 in almost every state. */
export function exemptWriters(c: ClusterModel): number {
  return c.nodes.filter((_, i) => acceptsWrites(c, i) && unstoppable(c, i)).length;
}

/**
 * The most advanced WAL position the cluster knows of: the leader's `/status` optime, and the member
 * keys and running servers of the members that may be promoted. A `nofailover` member's position does
 * not count, as in the reference's race (such a member neither leads nor holds the others back), nor
 * in `on` and `strict` mode that of a member `/sync` does not name (its WAL past the standbys' was
 * never acknowledged; found by the two-writes scenario of the mutation run).
 */
function mostAdvanced(c: ClusterModel): number {
  let best = c.optime;
  // In `on` and `strict` mode the race compares only the members `/sync` names: another's WAL is not acknowledged.
  const priorityMode = (c.mode === 'on' || c.mode === 'strict') && c.sync;
  for (const [j, n] of c.nodes.entries()) {
    // Nor, likewise, does the WAL of a member whose watchdog cannot be activated (the reference's failover_limitation).
    if (n.noFailover || n.watchdogFailed) continue;
    if (priorityMode && c.sync!.leader !== j && !c.sync!.standbys.includes(j)) continue;
    if (n.member?.running) best = Math.max(best, n.member.wal);
    if (n.pg === 'running' && n.agent === 'up' && n.op === 'none') best = Math.max(best, n.wal);
  }
  return best;
}

/**
 * 2. A promotion (judged on the state it was decided in): never of a `nofailover` node; an automatic
 * one never while paused and only within maximum_lag_on_failover. 3. An automatic promotion in a
 * synchronous mode holds every acknowledged commit.
 */
export function checkPromotion(before: ClusterModel, p: Promotion): Violation | null {
  const n = before.nodes[p.node];
  if (n.noFailover) return { invariant: 'promotion', message: `${name(p.node)} promoted although tagged nofailover` };
  if (p.manual) return null;
  if (p.paused)
    return { invariant: 'promotion', message: `${name(p.node)} promoted automatically while the cluster is paused` };
  const best = mostAdvanced(before);
  if (best - n.wal > MAXIMUM_LAG_ON_FAILOVER) {
    return {
      invariant: 'promotion',
      message: `${name(p.node)} promoted at WAL ${n.wal}, ${best - n.wal} behind the most advanced known position ${best} (maximum_lag_on_failover ${MAXIMUM_LAG_ON_FAILOVER})`,
    };
  }
  if (!p.forced && before.mode !== 'off' && before.acked?.sync && !holdsCommit(before, n, before.acked)) {
    return {
      invariant: 'sync',
      message: `${name(p.node)} promoted in synchronous mode without the acknowledged commit at ${before.acked.timeline}/${before.acked.wal}`,
    };
  }
  return null;
}

/**
 * 2b. The race elects the most advanced eligible member it can reach: a node that won the leader
 * race (an automatic promotion) holds every commit that any member it could reach held then, a member
 * that may be promoted (its agent answers the probe, its member key lives, PostgreSQL runs, not
 * `nofailover`). So an asynchronous failover loses only what no reachable eligible member has. In
 * synchronous modes only members `/sync` names are eligible (`on`, `strict`), and the former `/sync`
 * leader's unacknowledged WAL is not owed (the reference's race ignores it too). WAL that a member
 * holds past the point where the cluster's history ended its timeline was lost at an earlier
 * failover: it is no commit of the cluster's any more.
 */
export function checkRace(before: ClusterModel, p: Promotion): Violation | null {
  if (!p.raced || p.manual || p.paused) return null;
  const winner = before.nodes[p.node];
  const priorityMode = before.mode === 'on' || before.mode === 'strict';
  for (let j = 0; j < before.nodes.length; j++) {
    const peer = before.nodes[j];
    if (
      j === p.node ||
      peer.noFailover ||
      peer.watchdogFailed ||
      !reaches(before, p.node, j) ||
      peer.agent !== 'up' ||
      !peer.member ||
      peer.pg !== 'running' ||
      peer.op === 'demote' ||
      peer.op === 'start'
    )
      continue;
    if (before.mode !== 'off' && before.sync) {
      if (before.sync.leader === j) continue;
      if (priorityMode && !before.sync.standbys.includes(j)) continue;
    }
    const fork = before.history.find((h) => h[0] === peer.timeline);
    const upTo = fork ? Math.min(peer.wal, fork[1]) : peer.wal;
    const commit = { timeline: peer.timeline, wal: upTo };
    if (!holdsCommit(before, winner, commit)) {
      return {
        invariant: 'race',
        message: `${name(p.node)} won the leader race at ${winner.timeline}/${winner.wal} but ${name(j)}, reachable and eligible, held ${peer.timeline}/${upTo}`,
      };
    }
  }
  return null;
}

/** Rounds of the fault-free schedule a state may take to settle. */
export const SETTLE_ROUNDS = 24;

/**
 * 4. No livelock: with no further faults or operations, every running agent cycling, every pending
 * action completing, WAL shipped and time passing, the cluster reaches a state that one more round
 * leaves unchanged (each node in a steady role, or waiting on a lease or deadline that time ends).
 * A cycle of distinct states, or no fixpoint within SETTLE_ROUNDS, is a violation; so is a settled
 * state with a hung server its agent let be (16, hung-rule.ts), or without a leader while a member may win the
 * race (6, availability.ts), or whose synchronous
 * replication is weaker than the setting says (7, sync-settled.ts; 8 outside strict mode, site-rule-settled.ts).
 */
export function checkProgress(start: ClusterModel, bounds: Bounds, mutation?: DecisionMutation): Violation | null {
  const quiet: Bounds = {
    ...bounds,
    faults: start.faults,
    operations: start.operations,
    writes: start.writes,
    staleReads: start.staleReads,
  };
  const seen = new Map<string, number>();
  let c = start;
  for (let round = 0; round <= SETTLE_ROUNDS; round++) {
    const key = stateKey(c);
    const at = seen.get(key);
    if (at !== undefined) {
      // Settled: 6. availability (availability.ts; 6b with a request pending, request-rules.ts) and 7. the synchronous
      // setting (sync-settled.ts) are judged on it.
      if (at === round - 1)
        return (
          checkHungEnded(c) ??
          checkAvailability(c) ??
          checkRequestSettled(c) ??
          checkSyncSettled(c) ??
          checkSiteRuleSettled(c) ??
          checkWatchdogSettled(c)
        );
      return {
        invariant: 'progress',
        message: `livelock: the fault-free schedule cycles through ${round - at} states without settling`,
      };
    }
    seen.set(key, round);
    c = fairRound(c, quiet, mutation);
  }
  return { invariant: 'progress', message: `no steady state within ${SETTLE_ROUNDS} fault-free rounds of loop_wait` };
}

/** One round of the fault-free schedule: each running agent cycles, pending actions complete, WAL ships, loop_wait passes. */
export function fairRound(c: ClusterModel, bounds: Bounds, mutation?: DecisionMutation): ClusterModel {
  const step = (kind: 'cycle' | 'complete' | 'ship' | 'tick', node = -1) => {
    c = applyAction(c, { kind, node, label: kind }, bounds, mutation).next;
  };
  c.nodes.forEach((_, i) => {
    if (c.nodes[i].agent === 'up') step('cycle', i);
  });
  c.nodes.forEach((_, i) => {
    if (c.nodes[i].agent === 'up' && c.nodes[i].op !== 'none') step('complete', i);
  });
  c.nodes.forEach((n, i) => {
    if (n.pg === 'running' && !n.primary && n.op === 'none' && n.upstream >= 0) step('ship', i);
  });
  step('tick');
  return c;
}
