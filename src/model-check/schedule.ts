import { enabledActions } from './actions';
import { Action, ActionKind, Bounds, DecisionMutation, Violation } from './model-types';
import { ClusterModel, NODE_NAMES } from './model';
import { steadyStart } from './search';
import { checkedStep } from './step';

/**
 * A scenario's fixed schedule (issue 34, part 3): the steps that bring the cluster to a state deeper than a
 * breadth-first search reaches (a leader frozen through a failover whose new leader is lost in turn), from
 * where a small search takes over. Written as `agentFreeze n1, loop_wait, ...`: `loop_wait` is one round of
 * the HA loop (each running agent that has not cycled since the last tick cycles, its pending action
 * completes, then time passes `loop_wait`), any other entry is one step, `kind node` or `kind`.
 */
export function parseSchedule(text: string): Action[] {
  return text.split(',').map((entry) => {
    const label = entry.trim();
    const [kind, node] = label.split(' ');
    return {
      kind: kind as ActionKind,
      node: node ? NODE_NAMES.indexOf(node as (typeof NODE_NAMES)[number]) : -1,
      label,
    };
  });
}

export type ScheduleOutcome =
  | { kind: 'reached'; c: ClusterModel; path: Action[] }
  | { kind: 'violation'; violation: Violation; path: Action[] }
  /** The decision code under test took another way: a step of the schedule is not possible. */
  | { kind: 'off course'; at: string };

/** Takes the schedule from the steady start, every step judged by the per-step invariants. */
export function runSchedule(
  schedule: Action[],
  mode: ClusterModel['mode'],
  bounds: Bounds,
  mutation?: DecisionMutation,
): ScheduleOutcome {
  let c = steadyStart(mode, bounds, mutation);
  // The schedule's own steps may be of kinds the search after it does not take (the faults that set the scene).
  const kinds = bounds.kinds && new Set([...bounds.kinds, ...schedule.map((a) => a.kind), 'cycle', 'complete', 'tick']);
  bounds = { ...bounds, ...(kinds ? { kinds: kinds as Set<ActionKind> } : {}) };
  const path: Action[] = [];
  const take = (action: Action): ScheduleOutcome | null => {
    if (!enabledActions(c, bounds).some((a) => a.label === action.label))
      return { kind: 'off course', at: action.label };
    const step = checkedStep(c, action, bounds, mutation);
    path.push(action);
    if (step.violation) return { kind: 'violation', violation: step.violation, path };
    c = step.next;
    return null;
  };
  const named = (kind: ActionKind, i: number): Action => ({ kind, node: i, label: `${kind} ${NODE_NAMES[i]}` });
  for (const planned of schedule) {
    if (planned.label !== 'loop_wait') {
      const stop = take(planned);
      if (stop) return stop;
      continue;
    }
    for (const [i, n] of c.nodes.entries()) {
      if (n.agent !== 'up' || n.cycled) continue;
      const stop = take(named('cycle', i));
      if (stop) return stop;
    }
    for (const [i, n] of c.nodes.entries()) {
      if (n.agent !== 'up' || n.op === 'none') continue;
      const stop = take(named('complete', i));
      if (stop) return stop;
    }
    const stop = take({ kind: 'tick', node: -1, label: 'tick' });
    if (stop) return stop;
  }
  return { kind: 'reached', c, path };
}
