import { Action, Violation } from './model-types';
import { ClusterModel, DcsRead, NODE_NAMES } from './model';

/**
 * 11. Maintenance mode keeps no stale leader (issue 34, part 3; Patroni 4.1 documents it: while paused, a
 * leader whose PostgreSQL is not running, or not as a primary, removes its leader key): a paused cluster's
 * key holder that reaches the DCS and has no action in flight gives the key up in the cycle that finds its
 * PostgreSQL stopped, crashed or in recovery. Else `/leader` keeps naming a node that takes no writes, for
 * up to ttl, and an operator's manual failover to another member waits on it; once the agent resumes
 * within ttl it refreshes the key and restarts the crashed primary instead of letting the cluster fail over.
 * Judged on the cycle's step, on what the node read (a stale read included).
 */
export function checkPausedKeyHolder(before: ClusterModel, after: ClusterModel, action: Action): Violation | null {
  if (action.kind !== 'cycle') return null;
  const i = action.node;
  const n = before.nodes[i];
  const read = n.view ? (JSON.parse(n.view) as DcsRead) : before;
  if (!read.pause || read.leaderKey !== i || before.leaderKey !== i || !before.quorum || n.dcsCut) return null;
  // A hung postmaster runs (as the reference's is_running sees it): the rule is about a stopped or demoted one.
  if (n.op !== 'none' || ((n.pg === 'running' || n.pg === 'hung') && n.primary)) return null;
  if (after.leaderKey !== i) return null;
  return {
    invariant: 'pause',
    message: `${NODE_NAMES[i]} keeps the leader key while paused although its PostgreSQL is ${n.pg === 'running' ? 'in recovery' : n.pg}`,
  };
}

/**
 * 11b. Maintenance mode leaves the leader key with the running primary (Patroni 4.1's `is_healthiest_node`: "in
 * pause leader is the healthiest", whatever its timeline): a paused cluster's running primary whose agent reaches
 * the DCS and finds the key free takes it in that cycle. Else `/leader` stays empty (patronictl list shows no
 * leader, the REST API's /primary answers 503) while PostgreSQL takes writes, until the operator resumes. Judged on
 * the cycle's step, on what the node read; not with a manual failover pending (the operator's request decides).
 */
export function checkPausedPrimaryTakesKey(
  before: ClusterModel,
  after: ClusterModel,
  action: Action,
): Violation | null {
  if (action.kind !== 'cycle') return null;
  const i = action.node;
  const n = before.nodes[i];
  const read = n.view ? (JSON.parse(n.view) as DcsRead) : before;
  if (!read.pause || read.failover || read.leaderKey !== -1 || before.leaderKey !== -1 || !before.quorum || n.dcsCut)
    return null;
  if (n.op !== 'none' || n.pg !== 'running' || !n.primary || after.leaderKey === i) return null;
  return {
    invariant: 'pause',
    message: `${NODE_NAMES[i]} runs as a primary while paused and finds the leader key free, yet does not take it`,
  };
}
