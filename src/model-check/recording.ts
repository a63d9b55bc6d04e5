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

/** What the projections must say about a state: the fields the model knows. */
export function expectedProjection(c: ClusterModel) {
  return {
    timeline: Math.max(1, ...c.history.map((h) => h[0] + 1)),
    paused: c.pause,
    members: c.nodes.map((n) => ({ state: pgName(n), role: n.role, leadership: leadership(n) })),
  };
}

export function projectionOf(c: ClusterModel): ServedProjections {
  const members: ServedProjections['cluster']['members'] = {};
  c.nodes.forEach((n, i) => {
    members[NODE_NAMES[i]] = { state: pgName(n), role: n.role, leadership: leadership(n) };
  });
  const expected = expectedProjection(c);
  const leaders = c.nodes.map((n, i) => (n.leader ? NODE_NAMES[i] : null)).filter((x) => x !== null);
  return {
    cluster: { leader: leaders[0] ?? null, timeline: expected.timeline, paused: c.pause, members },
    history: [],
    schedule: [],
  };
}

/** Folds the step's events into the projections of the state before; null when they agree with the state after, else what differs. */
export function replayMismatch(before: ClusterModel, after: ClusterModel, events: ModelEvent[]): string | null {
  let projections = projectionOf(before);
  for (const event of events)
    projections = evolveAll(projections, { ...event, seq: 1, at: '2026-01-01T00:00:00.000Z' });
  const want = expectedProjection(after);
  const got = projections.cluster;
  if (got.timeline !== want.timeline) return `replayed timeline ${got.timeline}, state timeline ${want.timeline}`;
  if (got.paused !== want.paused) return `replayed paused ${got.paused}, state paused ${want.paused}`;
  for (let i = 0; i < want.members.length; i++) {
    const member = got.members[NODE_NAMES[i]] ?? {};
    const expected = want.members[i];
    for (const field of ['state', 'role', 'leadership'] as const) {
      if (member[field] !== expected[field])
        return `${NODE_NAMES[i]}: replayed ${field} ${member[field]}, state ${expected[field]}`;
    }
  }
  // With two nodes believing they lead (one stale), which one the log names depends on history before this step.
  const believers = (c: ClusterModel) => c.nodes.filter((n) => n.leader).length;
  const leaderName = NODE_NAMES[after.nodes.findIndex((n) => n.leader)];
  if (believers(before) <= 1 && believers(after) === 1 && got.leader !== leaderName)
    return `replayed leader ${got.leader}, state leader ${leaderName}`;
  return null;
}
