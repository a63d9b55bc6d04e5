import { barredFromRace, hasLeader, leadsByFailsafe } from './availability';
import { Action, Promotion, Violation } from './model-types';
import { ClusterModel, DcsRead, MAXIMUM_LAG_ON_FAILOVER, NODE_NAMES, NodeModel, reaches } from './model';
import { asRead, postgresStateName } from './snapshot';
import { modelSiteOf } from './site-rule';

/**
 * 10. The leader's answer to a switchover or manual failover (issue 34, part 3; Patroni 4.1's documented
 * behaviour: "the leader checks that a healthy candidate exists before it steps down; otherwise the
 * switchover fails"): a leader that has a due request in front of it
 * - steps down for it (a graceful demotion) only if some member could take over: its agent answers the leader,
 *   its member key lives, PostgreSQL runs as a replica, it is not `nofailover` and its watchdog (when `required`)
 *   can be activated, it is within
 *   `maximum_lag_on_failover` of the leader, it is the member the request names (when it names one) or of the
 *   site a switchover names (model.ts switchoverSite: a switchover to a site moves the leader there or not at all),
 *   and in `on` and `strict` mode `/sync` names it (unless the request is a manual failover, which names
 *   no leader). Otherwise the cluster loses the primary it had for a candidate that cannot take over;
 * - refuses it (clears it and stays) only if no member plainly could: a member counts here only when
 *   every rule above lets it through with room to spare (no lag at all, on the leader's timeline and streaming from
 *   it, its agent past its first cycle, nothing in flight),
 *   so that this side flags only a refusal no reading of the rules allows.
 * In quorum mode a request that names no member needs `quorum` + 1 such members (the reference's
 * `is_failover_possible`: enough members left for the quorum), on either side.
 * Judged on the cycle's step, on what the leader read (a stale read included). Scheduled requests are
 * judged only once due; a request the leader is not named in, or that names it as the candidate, is not judged.
 */
export function checkRequestAnswer(before: ClusterModel, after: ClusterModel, action: Action): Violation | null {
  if (action.kind !== 'cycle') return null;
  const i = action.node;
  const node = before.nodes[i];
  const view = node.view ? asRead(before, JSON.parse(node.view) as DcsRead) : before;
  const request = view.failover;
  // The leader refreshes its key in the cycle that answers: it reaches the DCS and still holds the key.
  if (!request || view.pause || !before.quorum || node.dcsCut || view.leaderKey !== i || before.leaderKey !== i)
    return null;
  if (request.dueIn !== null && request.dueIn > 0) return null;
  if (request.member === i || (request.leader >= 0 && request.leader !== i)) return null;
  if (!(node.pg === 'running' && node.primary && node.op === 'none')) return null;
  const kind = request.leader >= 0 ? 'switchover' : 'manual failover';
  // The members the leader's probe asks: those its read shows (failsafe/probe-targets.ts), a stale read's too.
  // The members the probe reaches now: neither side cut off from its peers (failsafe searches).
  const probed = view.nodes.map((m, j) => (reaches(before, i, j) ? m.member : null));
  // A switchover to a site (model.ts switchoverSite): only a member of that site counts.
  const site = request.leader >= 0 && request.member < 0 ? view.settings?.switchoverSite : undefined;
  // Quorum mode without a named candidate: enough members must be left to take over for the quorum.
  const needed = view.mode === 'quorum' && view.sync && request.member < 0 ? 1 + view.sync.quorum : 1;
  const to = request.member >= 0 ? ` to ${NODE_NAMES[request.member]}` : site ? ` to site ${site}` : '';
  const steppedDown = after.nodes[i].op === 'switchover';
  const others = view.nodes
    .map((_, j) => j)
    .filter((j) => j !== i && (request.member < 0 || j === request.member) && (!site || modelSiteOf(view, j) === site));
  const possible = others.filter((j) => mayTakeOver(view, probed, i, j, request.leader >= 0, false));
  if (steppedDown && possible.length < needed) {
    return {
      invariant: 'request',
      message: `${NODE_NAMES[i]} stepped down for a ${kind}${to} although ${possible.length === 0 ? 'no member' : `only ${possible.map((j) => NODE_NAMES[j]).join(', ')}`} could take over${needed > 1 ? ` (quorum ${needed - 1})` : ''}`,
    };
  }
  const refused = !steppedDown && after.failover === null && after.leaderKey === i;
  // A scheduled request past its time may be cleaned up as stale: only one asked for now is judged.
  if (!refused || request.dueIn !== null) return null;
  const plain = others.filter((j) => mayTakeOver(view, probed, i, j, request.leader >= 0, true));
  if (plain.length < needed) return null;
  const shown = plain.map((j) => `${NODE_NAMES[j]} (WAL ${view.nodes[j].timeline}/${view.nodes[j].wal})`).join(', ');
  return {
    invariant: 'request',
    message: `${NODE_NAMES[i]} refused a ${kind}${to} although ${shown} could take over (the leader at ${node.timeline}/${node.wal}${needed > 1 ? `, quorum ${needed - 1}` : ''})`,
  };
}

/**
 * Whether member j could take over from leader i as the leader sees it (`probed`: the member keys its probe
 * asks: those its read shows, each asked as it is now); `plainly`: with room to spare on
 * every rule (the refusal side), else with none (the stepping-down side).
 */
function mayTakeOver(
  view: ClusterModel,
  probed: readonly unknown[],
  i: number,
  j: number,
  leaderNamed: boolean,
  plainly: boolean,
  followsLeader = true,
): boolean {
  // The node's own part of `view` is as it is now (asRead): the probe asks the members as they are now.
  const n: NodeModel = view.nodes[j];
  const leader = view.nodes[i];
  // Watchdog mode `required` without a usable one: no candidate (its status document says so; invariant 13).
  if (n.agent !== 'up' || !probed[j] || n.noFailover || n.watchdogFailed) return false;
  if (postgresStateName(n) !== 'running' || n.primary) return false;
  const sync = view.mode === 'on' || view.mode === 'strict' ? view.sync : null;
  if (leaderNamed && sync && sync.leader !== j && !sync.standbys.includes(j)) return false;
  if (!plainly) return leader.wal - n.wal <= MAXIMUM_LAG_ON_FAILOVER;
  return (
    !n.waking &&
    n.op === 'none' &&
    n.timeline === leader.timeline &&
    n.wal === leader.wal &&
    (!followsLeader || n.upstream === i)
  );
}

/**
 * 6b. Availability with a request pending (invariant 6 leaves such states out): a settled cluster whose due
 * switchover or manual failover names a member that plainly may take over (its agent runs past its first
 * cycle, its member key lives, it reaches the DCS, PostgreSQL runs as a replica with nothing in flight, not
 * `nofailover`, not barred from the race as invariant 6 bars a member (a failed watchdog, cut off from its
 * peers, failsafe mode's rules), and in `on` and `strict` mode `/sync` names it unless the request names no
 * leader) has a leader (a failsafe leader counts): the race lets the named candidate win whatever its lag (the reference's "I am the failover
 * candidate"). A switchover that names no member, outside quorum mode: the same for some member other than
 * the leader that stepped down, when no other member that answers holds more WAL (the race passes over the
 * leader that stepped down) and none runs as a primary, as the race among the rest then lets it win.
 */
// Paused too, when the request names the member: the candidate's rule comes before the pause's.
export function checkRequestSettled(c: ClusterModel): Violation | null {
  const request = c.failover;
  // Paused, the named candidate still takes over (an operator's manual failover); an unnamed one does not.
  if (!request || !c.quorum || (c.pause && request.member < 0) || hasLeader(c) || leadsByFailsafe(c)) return null;
  if (request.dueIn !== null && request.dueIn > 0) return null;
  const answers = (n: NodeModel) => n.agent === 'up' && !n.waking && n.member !== null;
  const sync = c.mode === 'on' || c.mode === 'strict' ? c.sync : null;
  const plain = (j: number) => {
    const n = c.nodes[j];
    if (!answers(n) || n.dcsCut || n.noFailover || n.pg !== 'running' || n.primary || n.op !== 'none') return false;
    if (barredFromRace(c, j)) return false;
    return !(request.leader >= 0 && sync && sync.leader !== j && !sync.standbys.includes(j));
  };
  let candidate = -1;
  if (request.member >= 0) {
    if (plain(request.member)) candidate = request.member;
  } else if (c.mode !== 'quorum' && !c.nodes.some((n) => n.pg === 'running' && n.primary)) {
    candidate = c.nodes.findIndex(
      (n, j) =>
        j !== request.leader &&
        plain(j) &&
        c.nodes.every(
          (m, k) =>
            k === j || k === request.leader || !answers(m) || m.pg !== 'running' || m.noFailover || m.wal <= n.wal,
        ),
    );
  }
  if (candidate < 0) return null;
  const n = c.nodes[candidate];
  return {
    invariant: 'availability',
    message: `the cluster settled without a leader, a ${request.leader >= 0 ? 'switchover' : 'manual failover'} pending, although ${NODE_NAMES[candidate]} (WAL ${n.timeline}/${n.wal}) may take over`,
  };
}

/**
 * 10b. Who wins the race a request asked for (the reference's manual failover process without a leader): while
 * a due switchover or manual failover names a member that answers the racer's probe (its agent runs, its member
 * key lives in the racer's read, whom its probe asks, PostgreSQL runs, not `nofailover`), no other member wins the race; and the leader
 * that stepped down for a switchover does not take its key back while a member other than itself could take
 * over (as the leader's check before stepping down counts them: agent running past its first cycle, member key
 * live, PostgreSQL running as a replica with nothing in flight, no lag at all, `/sync` naming it in `on` and
 * `strict` mode). Else the operator's switchover ends on a member it did not name, or back where it started.
 */
export function checkRequestWinner(before: ClusterModel, p: Promotion): Violation | null {
  if (!p.raced) return null;
  const winner = before.nodes[p.node];
  const view = winner.view ? asRead(before, JSON.parse(winner.view) as DcsRead) : before;
  const request = view.failover;
  if (!request || (request.dueIn !== null && request.dueIn > 0)) return null;
  const kind = request.leader >= 0 ? 'switchover' : 'manual failover';
  // As the race's probe: the members the winner's read shows (failsafe/probe-targets.ts) that it reaches now.
  const probed = view.nodes.map((n, j) => (reaches(before, p.node, j) ? n.member : null));
  const m = request.member;
  if (m >= 0 && m !== p.node) {
    const candidate = before.nodes[m];
    if (candidate.agent === 'up' && probed[m] && postgresStateName(candidate) === 'running' && !candidate.noFailover) {
      return {
        invariant: 'request',
        message: `${NODE_NAMES[p.node]} won the leader race although the ${kind} names ${NODE_NAMES[m]}, which answers its probe`,
      };
    }
  }
  if (request.leader === p.node && !view.pause) {
    const other = view.nodes.findIndex(
      (n, j) => j !== p.node && (m < 0 || j === m) && mayTakeOver(view, probed, p.node, j, true, true, false),
    );
    if (other >= 0)
      return {
        invariant: 'request',
        message: `${NODE_NAMES[p.node]}, which stepped down for a ${kind}, won the leader race back although ${NODE_NAMES[other]} could take over`,
      };
  }
  return null;
}
