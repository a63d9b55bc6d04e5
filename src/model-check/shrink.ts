import { enabledActions } from './actions';
import { Action, Bounds, DecisionMutation, Violation } from './model-types';
import { checkProgress } from './invariants';
import { ClusterModel } from './model';
import { FoundViolation } from './search';
import { checkedStep } from './step';

/** Replays `path` from `start`; each step must be enabled where it is taken. The first violation and its step, if any. */
export function replayPath(
  start: ClusterModel,
  path: Action[],
  bounds: Bounds,
  mutation?: DecisionMutation,
): { violation: Violation; steps: number } | null {
  let c = start;
  for (let s = 0; s < path.length; s++) {
    const action = path[s];
    if (!enabledActions(c, bounds).some((a) => a.label === action.label)) return null;
    const step = checkedStep(c, action, bounds, mutation);
    if (step.violation) return { violation: step.violation, steps: s + 1 };
    c = step.next;
  }
  const stuck = checkProgress(c, bounds, mutation);
  return stuck ? { violation: stuck, steps: path.length } : null;
}

/**
 * A random walk's counter-example made short: steps are left out, in chunks then one by one, as
 * long as the rest still violates the same invariant. The result is locally minimal, not always
 * the shortest (the exhaustive search gives those).
 */
export function shrink(
  start: ClusterModel,
  found: FoundViolation,
  bounds: Bounds,
  mutation?: DecisionMutation,
): FoundViolation {
  let best = found;
  for (let size = 16; size >= 1; size = Math.floor(size / 2)) {
    let i = 0;
    while (i < best.path.length) {
      const candidate = [...best.path.slice(0, i), ...best.path.slice(i + size)];
      const outcome = replayPath(start, candidate, bounds, mutation);
      if (outcome && outcome.violation.invariant === found.invariant) {
        best = { ...outcome.violation, path: candidate.slice(0, outcome.steps) };
      } else i++;
    }
  }
  return best;
}
