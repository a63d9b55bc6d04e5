import { NewEvent } from '../events/event';
import { evolveAll, ServedProjections } from '../events/event-log';
import { ClusterModel, NODE_NAMES, NodeModel } from './model';
import { postgresStateName } from './snapshot';

/**
 * Invariant 5's side: every change of a node's machines is a recorded event in the event store's
 * format, and folding a step's events into the projections (the real folds) gives the projections
 * the new state implies.
 */

/** A recorded fact without its instant: the trace gives `at` when it is written out. */
export type Fact = {
  stream: string;
  type: string;
  node: number;
  cause: string;
  from?: string | null;
  to?: string | null;
  data?: Record<string, unknown>;
};

export type ModelEvent = Omit<NewEvent, 'at'>;

const pgName = (n: NodeModel) => postgresStateName(n);
const leadership = (n: NodeModel) => (n.leader ? 'leader' : 'follower');

/**
 * The machine transitions between two states of a node, as the transition recorder writes them
 * (`<machine>.transition` on `node/<name>/<machine>`); an agent that starts again records its machines
 * from null, as xstate's first snapshot does.
 */
export function transitionEvents(
  before: ClusterModel,
  after: ClusterModel,
  cause: string,
  dropsEvent?: (type: string, to: string | null) => boolean,
): ModelEvent[] {
  const events: ModelEvent[] = [];
  after.nodes.forEach((n, i) => {
    const old = before.nodes[i];
    const node = NODE_NAMES[i];
    const restarted = old.agent === 'down' && n.agent === 'up';
    const add = (machine: string, from: string | null, to: string) => {
      if (!restarted && from === to) return;
      if (dropsEvent?.(`${machine}.transition`, to)) return;
      events.push({
        stream: `node/${node}/${machine}`,
        type: `${machine}.transition`,
        node,
        from: restarted ? null : from,
        to,
        cause,
        data: {},
      });
    };
    add('postgres', pgName(old), pgName(n));
    add('role', old.role, n.role);
    add('leadership', leadership(old), leadership(n));
  });
  return events;
}

export function factEvents(facts: Fact[]): ModelEvent[] {
  return facts.map((f) => ({
    stream: f.stream,
    type: f.type,
    node: NODE_NAMES[f.node],
    from: f.from ?? null,
    to: f.to ?? null,
    cause: f.cause,
    data: f.data ?? {},
  }));
}

/** The timeline the projections must show for a state: one past the last the history ended. */
function timelineOf(c: ClusterModel): number {
  let timeline = 1;
  for (const h of c.history) if (h[0] + 1 > timeline) timeline = h[0] + 1;
  return timeline;
}

export function projectionOf(c: ClusterModel): ServedProjections {
  const members: ServedProjections['cluster']['members'] = {};
  let leader: string | null = null;
  c.nodes.forEach((n, i) => {
    members[NODE_NAMES[i]] = { state: pgName(n), role: n.role, leadership: leadership(n) };
    if (n.leader && leader === null) leader = NODE_NAMES[i];
  });
  return { cluster: { leader, timeline: timelineOf(c), paused: c.pause, members }, history: [], schedule: [] };
}

const AT = '2026-01-01T00:00:00.000Z';

/** Folds the step's events into the projections of the state before; null when they agree with the state after, else what differs. */
export function replayMismatch(before: ClusterModel, after: ClusterModel, events: ModelEvent[]): string | null {
  let projections = projectionOf(before);
  // Each field named (a spread of events of two shapes was a tenth of the search's time).
  for (const e of events) {
    const recorded = {
      stream: e.stream,
      seq: 1,
      type: e.type,
      at: AT,
      node: e.node,
      from: e.from,
      to: e.to,
      cause: e.cause,
      data: e.data,
    };
    projections = evolveAll(projections, recorded);
  }
  const got = projections.cluster;
  const timeline = timelineOf(after);
  if (got.timeline !== timeline) return `replayed timeline ${got.timeline}, state timeline ${timeline}`;
  if (got.paused !== after.pause) return `replayed paused ${got.paused}, state paused ${after.pause}`;
  let believersBefore = 0;
  let believersAfter = 0;
  let leaderName: string | undefined;
  for (let i = 0; i < after.nodes.length; i++) {
    const n = after.nodes[i];
    const member = got.members[NODE_NAMES[i]] ?? {};
    const expected = { state: pgName(n), role: n.role, leadership: leadership(n) };
    if (member.state !== expected.state)
      return `${NODE_NAMES[i]}: replayed state ${member.state}, state ${expected.state}`;
    if (member.role !== expected.role) return `${NODE_NAMES[i]}: replayed role ${member.role}, state ${expected.role}`;
    if (member.leadership !== expected.leadership)
      return `${NODE_NAMES[i]}: replayed leadership ${member.leadership}, state ${expected.leadership}`;
    if (n.leader) {
      believersAfter++;
      leaderName ??= NODE_NAMES[i];
    }
    if (before.nodes[i].leader) believersBefore++;
  }
  // With two nodes believing they lead (one stale), which one the log names depends on history before this step.
  if (believersBefore <= 1 && believersAfter === 1 && got.leader !== leaderName)
    return `replayed leader ${got.leader}, state leader ${leaderName}`;
  return null;
}
