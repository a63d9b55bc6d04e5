/** Steps the cluster takes by itself: time passing (leases, keys, deadlines) and PostgreSQL's long actions completing. */
import { armFence } from './cycle';
import { DecisionMutation } from './model-types';
import { ClusterModel, LOOP_WAIT_S } from './model';
import { Fact } from './recording';
import { canStream } from './snapshot';
import { columnsTogether } from './commit-columns';

const LW = LOOP_WAIT_S * 1000;

/** loop_wait passes: leases and member keys run down, a due fence stops its postmaster. */
export function tick(c: ClusterModel): void {
  for (const n of c.nodes) {
    n.cycled = false;
    n.lease = Math.max(0, n.lease - LW);
    if (c.quorum && n.member) {
      n.memberLease = Math.max(0, n.memberLease - LW);
      if (n.memberLease === 0) n.member = null;
    }
    if (n.fence > 0) n.fence = Math.max(0, n.fence - LW);
    if (n.acceptedLeft > 0) {
      n.acceptedLeft = Math.max(0, n.acceptedLeft - LW);
      if (n.acceptedLeft === 0) n.acceptedLeader = -1;
    }
    if (n.fence === 0 && c.fenceLayer && !n.fenceDead) fenceFires(n);
  }
  if (c.quorum && c.leaderKey >= 0) {
    c.keyLease = Math.max(0, c.keyLease - LW);
    if (c.keyLease === 0) c.leaderKey = -1;
  }
  if (c.failover?.dueIn !== null && c.failover?.dueIn !== undefined)
    c.failover.dueIn = Math.max(-2 * LW, c.failover.dueIn - LW);
}

/** The fence's deadline passed without a new arm: it stops the postmaster (immediate shutdown), at once for one just started. */
function fenceFires(n: ClusterModel['nodes'][number]): void {
  if (n.pg !== 'running' && n.pg !== 'hung') return;
  n.pg = 'crashed';
  n.primary = false;
  if (n.op !== 'none') n.op = 'none';
}

/** The long action in flight ends. */
export function complete(c: ClusterModel, i: number, facts: Fact[], mutation?: DecisionMutation): void {
  const n = c.nodes[i];
  const op = n.op;
  n.op = 'none';
  // Promoted, stopped or started again, the node no longer streams: its columns are one (commit-columns.ts).
  if (op !== 'none') columnsTogether(n);
  if (op === 'promote') {
    if (n.pg !== 'running') return;
    c.history.push([n.timeline, n.wal]);
    facts.push({
      stream: 'cluster',
      type: 'timeline.created',
      node: i,
      cause: 'promote',
      data: { timeline: n.timeline },
    });
    n.timeline++;
    n.primary = true;
    n.role = 'primary';
    n.upstream = -1;
    facts.push({
      stream: 'cluster',
      type: 'leader.promoted',
      node: i,
      cause: 'promote',
      data: { timeline: n.timeline },
    });
    if (n.leader && n.lease > 0) armFence(c, i, mutation);
    return;
  }
  if (op === 'switchover') {
    n.pg = 'stopped';
    n.primary = false;
    n.role = 'demoted';
    if (c.quorum && !n.dcsCut && c.leaderKey === i) c.leaderKey = -1;
    n.leader = false;
    n.fence = -1;
    return;
  }
  if (op === 'demote') {
    n.pg = 'stopped';
    n.primary = false;
    n.fence = -1;
    if (!n.opRestart) return;
  }
  if (op !== 'demote' && op !== 'start') return;
  startServer(c, i);
  // A primary's new fence starts armed with the deadline the agent armed last (one past stops it at once); a replica's unarmed.
  if (!n.primary) n.fence = -1;
  else if (n.fence === 0 && c.fenceLayer) fenceFires(n);
}

/** pg_rewind when the upstream's timeline forked before this node's position, then a start. */
function startServer(c: ClusterModel, i: number): void {
  const n = c.nodes[i];
  n.pg = 'running';
  // A new postmaster, a new fence (its parent).
  n.fenceDead = false;
  if (n.opAsPrimary) {
    n.primary = true;
    n.role = 'primary';
    return;
  }
  n.primary = false;
  n.role = 'replica';
  n.upstream = n.opUpstream;
  const up = n.opUpstream >= 0 ? c.nodes[n.opUpstream] : null;
  if (up && up.timeline > n.timeline && !canStream(c, n, up)) {
    const fork = c.history.find((h) => h[0] === n.timeline);
    n.wal = Math.min(n.wal, fork ? fork[1] : up.wal);
    n.timeline = up.timeline;
    n.wal = Math.min(n.wal, up.wal);
  }
}
