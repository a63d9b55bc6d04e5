import { CycleOutcome, runCycle } from './cycle';
import { Action, ActionKind, Bounds, DecisionMutation } from './model-types';
import { ClusterModel, cloneCluster, LOOP_WAIT_S, NODE_NAMES, timelineStart } from './model';
import { canStream, dcsRead, parsedStandbyNames, streamingFrom } from './snapshot';
import { Fact } from './recording';
import { complete, tick } from './time-and-postgres';
import { columnsApart, columnsTogether, committedColumn, shipStaged } from './commit-columns';

const FAULTS: ReadonlySet<ActionKind> = new Set([
  'agentCrash',
  'agentFreeze',
  'pgCrash',
  'pgHang',
  'fenceKill',
  'fenceLate',
  'dcsCut',
  'quorumLoss',
  'peerCut',
  'watchdogFail',
]);
const OPERATIONS: ReadonlySet<ActionKind> = new Set([
  'switchover',
  'switchoverAny',
  'scheduledSwitchover',
  'failover',
  'pause',
  'resume',
  'syncMode',
  'ttl',
  'noFailover',
  'failoverPriority',
]);

const LW = LOOP_WAIT_S * 1000;
const act = (kind: ActionKind, node = -1): Action => ({
  kind,
  node,
  label: node >= 0 ? `${kind} ${NODE_NAMES[node]}` : kind,
});

/** Running out of recovery and not shutting down: it accepts and commits writes. */
export function acceptsWrites(c: ClusterModel, i: number): boolean {
  const n = c.nodes[i];
  return n.pg === 'running' && n.primary && (n.op === 'none' || n.op === 'switchover');
}

export function enabledActions(c: ClusterModel, bounds: Bounds): Action[] {
  const on = (kind: ActionKind) => !bounds.kinds || bounds.kinds.has(kind);
  const actions: Action[] = [];
  const faultsLeft = c.faults < bounds.faults;
  const opsLeft = c.operations < bounds.operations && c.quorum;
  // Time passes only once every running agent had its cycle in this loop_wait (a frozen one models a stalled loop).
  if (on('tick') && c.nodes.every((n) => n.agent !== 'up' || n.cycled)) actions.push(act('tick'));
  c.nodes.forEach((n, i) => {
    if (n.agent === 'up' && on('cycle')) actions.push(act('cycle', i));
    if (n.agent === 'up' && !n.view && c.quorum && !n.dcsCut && c.staleReads < bounds.staleReads && on('read'))
      actions.push(act('read', i));
    if (n.agent === 'up' && n.op !== 'none' && on('complete')) actions.push(act('complete', i));
    if (n.pg === 'running' && !n.primary && n.op === 'none' && n.upstream >= 0 && on('ship')) {
      const up = c.nodes[n.upstream];
      if (canStream(c, n, up) && (up.wal > n.wal || up.timeline > n.timeline || columnsApart(n)))
        actions.push(act('ship', i));
    }
    if (acceptsWrites(c, i) && c.writes < bounds.writes && on('write')) actions.push(act('write', i));
    if (faultsLeft && n.agent === 'up' && on('agentCrash')) actions.push(act('agentCrash', i));
    if (faultsLeft && n.agent === 'up' && on('agentFreeze')) actions.push(act('agentFreeze', i));
    if (n.agent !== 'up' && on('agentRestart')) actions.push(act('agentRestart', i));
    if (faultsLeft && n.pg === 'running' && on('pgCrash')) actions.push(act('pgCrash', i));
    // Only in searches that name it (hung-rule.ts): the lock holder's running primary stops answering.
    if (faultsLeft && bounds.kinds?.has('pgHang') && acceptsWrites(c, i) && n.op === 'none' && c.leaderKey === i)
      actions.push(act('pgHang', i));
    // Fence faults matter only where a fence runs: on a primary (a replica's fence is disarmed).
    const fenceRuns = c.fenceLayer && n.pg === 'running' && n.primary && !n.fenceDead;
    if (faultsLeft && fenceRuns && on('fenceKill')) actions.push(act('fenceKill', i));
    if (faultsLeft && fenceRuns && !n.fenceLate && on('fenceLate')) actions.push(act('fenceLate', i));
    if (faultsLeft && !n.dcsCut && on('dcsCut')) actions.push(act('dcsCut', i));
    if (n.dcsCut && on('dcsHeal')) actions.push(act('dcsHeal', i));
    // Cut off from its peers only in failsafe searches: there it makes members refuse the leader's calls.
    if (faultsLeft && bounds.failsafe && !n.peerCut && on('peerCut')) actions.push(act('peerCut', i));
    if (n.peerCut && on('peerHeal')) actions.push(act('peerHeal', i));
    if (faultsLeft && bounds.watchdog && !n.watchdogFailed && on('watchdogFail')) actions.push(act('watchdogFail', i));
    if (opsLeft && on('noFailover')) actions.push(act('noFailover', i));
    if (opsLeft && on('failoverPriority')) actions.push(act('failoverPriority', i));
    const candidate = c.leaderKey >= 0 && i !== c.leaderKey && n.member?.running && !n.noFailover && !c.failover;
    if (opsLeft && candidate && on('switchover')) actions.push(act('switchover', i));
    if (opsLeft && n.member?.running && !n.noFailover && !c.failover && on('failover'))
      actions.push(act('failover', i));
  });
  if (faultsLeft && c.quorum && on('quorumLoss')) actions.push(act('quorumLoss'));
  if (!c.quorum && on('quorumBack')) actions.push(act('quorumBack'));
  if (opsLeft && c.leaderKey >= 0 && !c.failover && on('switchoverAny')) actions.push(act('switchoverAny'));
  if (opsLeft && c.leaderKey >= 0 && !c.failover && !c.pause && on('scheduledSwitchover'))
    actions.push(act('scheduledSwitchover'));
  if (opsLeft && !c.pause && on('pause')) actions.push(act('pause'));
  if (opsLeft && c.pause && on('resume')) actions.push(act('resume'));
  if (opsLeft && bounds.modes.length > 1 && on('syncMode')) actions.push(act('syncMode'));
  if (opsLeft && on('ttl')) actions.push(act('ttl'));
  return actions;
}

export interface StepResult {
  next: ClusterModel;
  facts: Fact[];
  cycle: CycleOutcome | null;
}

/** Takes one step from `c` (left unchanged). */
export function applyAction(c: ClusterModel, action: Action, bounds: Bounds, mutation?: DecisionMutation): StepResult {
  const next = cloneCluster(c);
  const facts: Fact[] = [];
  let cycle: CycleOutcome | null = null;
  const i = action.node;
  const n = i >= 0 ? next.nodes[i] : null;
  if (FAULTS.has(action.kind)) next.faults++;
  if (OPERATIONS.has(action.kind)) next.operations++;
  switch (action.kind) {
    case 'cycle':
      n!.cycled = true;
      n!.waking = false;
      cycle = runCycle(next, i, mutation);
      // A manual failover may pick any member, as the reference allows: commits acknowledged before it are outside invariant 3.
      if (cycle.promotion?.forced) next.acked = null;
      facts.push(...cycle.facts, {
        stream: `node/${NODE_NAMES[i]}/ha`,
        type: 'ha.verdict',
        node: i,
        cause: 'cycle',
        data: { verdict: cycle.verdict },
      });
      break;
    case 'read':
      n!.view = JSON.stringify(dcsRead(next));
      next.staleReads++;
      break;
    case 'tick':
      tick(next);
      break;
    case 'complete':
      complete(next, i, facts, mutation);
      break;
    case 'ship': {
      const up = n!.upstream >= 0 ? next.nodes[n!.upstream] : null;
      if (up && canStream(next, n!, up) && !shipStaged(next, n!, up)) {
        n!.wal = up.wal;
        n!.timeline = up.timeline;
      }
      break;
    }
    case 'write':
      n!.wal++;
      next.writes++;
      break;
    case 'agentCrash':
      n!.agent = 'down';
      n!.op = 'none';
      n!.leader = false;
      // The deadline the agent remembered dies with it; a running postmaster's fence keeps its own.
      if (n!.pg !== 'running') n!.fence = -1;
      // So does its failsafe memory: the `/failsafe` members it read, the leader whose call it accepted.
      n!.knownFailsafe = 0;
      n!.acceptedLeader = -1;
      n!.acceptedLeft = 0;
      break;
    case 'agentFreeze':
      n!.agent = 'frozen';
      break;
    case 'agentRestart':
      if (n!.agent === 'down')
        n!.role = n!.pg === 'running' && n!.primary ? 'primary' : n!.role === 'replica' ? 'replica' : 'demoted';
      n!.agent = 'up';
      n!.waking = true;
      break;
    case 'pgCrash':
      n!.pg = 'crashed';
      n!.primary = false;
      if (n!.op !== 'switchover') n!.op = 'none';
      columnsTogether(n!);
      break;
    case 'pgHang':
      n!.pg = 'hung';
      break;
    case 'fenceKill':
      // kill -9 of the fence alone: the postmaster, its child, is reparented and runs on.
      n!.fenceDead = true;
      break;
    case 'fenceLate':
      // Its clock drifts from the etcd leader's lease clock: the deadline armed next arrives past the lease.
      n!.fenceLate = true;
      if (n!.fence >= 0) n!.fence += LW;
      break;
    case 'dcsCut':
      n!.dcsCut = true;
      break;
    case 'dcsHeal':
      n!.dcsCut = false;
      break;
    case 'peerCut':
      n!.peerCut = true;
      break;
    case 'peerHeal':
      n!.peerCut = false;
      break;
    case 'watchdogFail':
      // Watchdog mode `required`, and the device can no longer be activated (the fence reports it; the agent shows watchdog_failed).
      n!.watchdogFailed = true;
      break;
    case 'quorumLoss':
      next.quorum = false;
      break;
    case 'quorumBack':
      next.quorum = true;
      break;
    case 'switchover':
      next.failover = { leader: next.leaderKey, member: i, dueIn: null };
      facts.push({
        stream: 'cluster',
        type: 'switchover.requested',
        node: next.leaderKey,
        cause: 'POST /switchover',
        data: { leader: NODE_NAMES[next.leaderKey], member: NODE_NAMES[i] },
      });
      break;
    case 'switchoverAny':
      next.failover = { leader: next.leaderKey, member: -1, dueIn: null };
      facts.push({
        stream: 'cluster',
        type: 'switchover.requested',
        node: next.leaderKey,
        cause: 'POST /switchover',
        data: { leader: NODE_NAMES[next.leaderKey] },
      });
      break;
    case 'scheduledSwitchover':
      next.failover = { leader: next.leaderKey, member: -1, dueIn: LW };
      facts.push({
        stream: 'cluster',
        type: 'switchover.requested',
        node: next.leaderKey,
        cause: 'POST /switchover',
        data: { leader: NODE_NAMES[next.leaderKey], scheduled_in_ms: LW },
      });
      break;
    case 'failover':
      next.failover = { leader: -1, member: i, dueIn: null };
      facts.push({
        stream: 'cluster',
        type: 'failover.requested',
        node: i,
        cause: 'POST /failover',
        data: { member: NODE_NAMES[i] },
      });
      break;
    case 'pause':
    case 'resume':
      next.pause = action.kind === 'pause';
      facts.push({
        stream: 'cluster',
        type: next.pause ? 'cluster.paused' : 'cluster.resumed',
        node: 0,
        cause: 'PATCH /config',
      });
      break;
    case 'syncMode': {
      next.mode = bounds.modes[(bounds.modes.indexOf(next.mode) + 1) % bounds.modes.length];
      facts.push({
        stream: 'cluster',
        type: 'config.changed',
        node: 0,
        cause: 'PATCH /config',
        data: { synchronous_mode: next.mode },
      });
      break;
    }
    case 'ttl':
      next.ttl = next.ttl === 30 ? 20 : 30;
      facts.push({
        stream: 'cluster',
        type: 'config.changed',
        node: 0,
        cause: 'PATCH /config',
        data: { ttl: next.ttl },
      });
      break;
    case 'noFailover':
      n!.noFailover = !n!.noFailover;
      break;
    case 'failoverPriority':
      n!.priority = n!.priority === 1 ? 2 : 1;
      break;
  }
  settleAcks(next);
  return { next, facts, cycle };
}

/**
 * Commits waiting on a primary are acknowledged once synchronous_standby_names lets them through:
 * at once without standbys listed, else when `count` listed standbys streaming from it hold them.
 */
export function settleAcks(c: ClusterModel): void {
  // Invariant 3 is about commits acknowledged under a synchronous mode: asynchronous ones may be lost.
  if (c.mode === 'off' && c.acked?.sync) c.acked = { ...c.acked, sync: false };
  c.nodes.forEach((n, i) => {
    if (n.pg !== 'running' || !n.primary) return;
    let upTo = n.wal;
    const listed = parsedStandbyNames(n.standbyNames);
    if (!listed) return;
    // The strict placeholder alone lists no member, yet PostgreSQL waits for a standby of that name: nothing is acknowledged.
    if (listed.kind !== 'off') {
      const names = new Set(listed.members);
      const positions = streamingFrom(c, i)
        .filter((j) => names.has(NODE_NAMES[j]) && c.nodes[j].timeline === n.timeline)
        .map((j) => committedColumn(c, c.nodes[j]))
        .sort((a, b) => b - a);
      upTo = positions.length >= listed.count ? Math.min(n.wal, positions[listed.count - 1]) : -1;
    }
    // WAL from before this timeline began was acknowledged (or not) by the primary that wrote it.
    if (upTo <= timelineStart(c, n.timeline)) return;
    // Positions only grow along one history: a commit past the last acknowledged one is a new one.
    // Synchronous replication is in force once `/sync` names this primary its leader; before that, commits are asynchronous.
    if (!c.acked || upTo > c.acked.wal)
      c.acked = { timeline: n.timeline, wal: upTo, sync: c.mode !== 'off' && c.sync?.leader === i };
  });
}
