import { Action, Bounds, DecisionMutation } from './model-types';
import { boundsFor } from './bounds';
import { ClusterModel, ReplicationMode } from './model';
import { loadDecisionCode } from './mutant-loader';
import { Mutant } from './mutants';
import { checkProgress } from './invariants';
import { breadthFirst, randomWalks, steadyStart } from './search';
import { shrink } from './shrink';
import { checkQuorumResolver } from './quorum-resolver-check';
import { checkAgainstReference } from './quorum-reference';
import { parseSchedule, runSchedule } from './schedule';
import { SCENARIOS } from './mutation-scenarios';

/**
 * The mutation run (issue 34, part 3): each mutant of the decision code in turn, loaded in place of
 * the real code, is searched for a violation: breadth-first, then seeded random walks, in the modes
 * its file matters in. A mutant is caught when an invariant fails (or the model cannot run the
 * decision: decide() asks for what the cycle never gives, an action the model does not know), and
 * survives otherwise. Mutants of decide() are judged without any fence, so that the fence cannot hide
 * them; the fence's own arming with every fence in place.
 */

export interface MutationBudget {
  /** Distinct states of each breadth-first search over every kind of step. */
  states: number;
  /** Distinct states of each scenario's search. */
  scenarioStates: number;
  /** Random walks of `walkSteps` steps, after the search. */
  walks: number;
  walkSteps: number;
}

/** Settling (invariants 4, 6, 7) is judged on one new state in this many of a scenario's search: the liveness mutants show only there. */
export const SCENARIO_PROGRESS_EVERY = 16;

export const FULL_BUDGET: MutationBudget = { states: 1_000, scenarioStates: 2_500, walks: 30, walkSteps: 300 };

/**
 * The walks favour time and the HA loop over faults: a decision that fails to end a primary's term
 * shows only once loop_wait passed a few times after the fault (a leader cut off needs three ticks,
 * each after every running agent cycled), which uniform walks among 20 kinds of step rarely reach.
 */
export const MUTANT_WALK_WEIGHTS = { tick: 8, cycle: 4, complete: 3, ship: 2, write: 2 } as const;

export interface MutantResult {
  mutant: Mutant;
  caught: boolean;
  mode?: ReplicationMode;
  /** The scenario whose search caught it (none: the search over every kind, or the walks). */
  scenario?: string;
  /** The invariant, or `model` when the model could not run the mutated decision. */
  invariant?: string;
  message?: string;
  /** Steps of the counter-example (shrunk when a walk found it). */
  steps?: number;
  /** Transitions taken and walk steps, over every mode searched. */
  transitions: number;
  elapsedMs: number;
}

/** The modes to search a mutant in, the likeliest to catch it first. */
export function modesFor(m: Mutant): ReplicationMode[] {
  if (/quorum/.test(m.file)) return ['quorum'];
  // Asynchronous mode last: a guard of the sync rules removed there reads a `/sync` that is not written.
  if (m.file === 'ha/sync/sync-eligibility.ts') return ['on', 'quorum', 'off'];
  // The candidates and readiness have branches of their own for quorum mode.
  if (m.file === 'ha/sync/sync-candidates.ts' || m.file === 'ha/sync/readiness.ts') return ['on', 'strict', 'quorum'];
  if (m.file.startsWith('ha/sync/')) return ['on', 'strict'];
  if (m.file === 'ha/leader-race.ts') return ['off', 'on'];
  return ['off'];
}

export function runMutant(m: Mutant, budget: MutationBudget, modes: ReplicationMode[] = modesFor(m)): MutantResult {
  const started = Date.now();
  let transitions = 0;
  const result = (r: Partial<MutantResult>): MutantResult => ({
    mutant: m,
    caught: false,
    transitions,
    elapsedMs: Date.now() - started,
    ...r,
  });
  let mode: ReplicationMode = modes[0];
  try {
    const mutation: DecisionMutation = { name: m.id, code: loadDecisionCode(new Map([[m.file, m.source]])) };
    for (mode of modes) {
      // A planner that never reaches the wanted state, or a race nobody wins, shows in the cluster left alone.
      const settled = checkProgress(
        steadyStart(mode, boundsFor(mode, 0, 0, 0, 0, !m.withFence), mutation),
        boundsFor(mode, 0, 0, 0, 0, !m.withFence),
        mutation,
      );
      if (settled)
        return result({
          caught: true,
          mode,
          scenario: 'left alone',
          invariant: settled.invariant,
          message: settled.message,
          steps: 0,
        });
      // The resolver's phases a three-node cluster never reaches: judged on the resolver from every small state.
      if (m.file === 'ha/sync/quorum-resolver.ts') {
        const resolver =
          checkQuorumResolver(mutation.code!.quorumTransitions) ??
          checkAgainstReference(mutation.code!.quorumTransitions);
        if (resolver)
          return result({
            caught: true,
            mode,
            scenario: 'the resolver from every small state',
            invariant: resolver.invariant,
            message: resolver.message,
          });
      }
      for (const scenario of SCENARIOS) {
        if (scenario.modes && !scenario.modes.includes(mode)) continue;
        const bounds: Bounds = {
          ...boundsFor(
            mode,
            scenario.faults ?? 1,
            scenario.operations ?? 0,
            scenario.writes ?? 1,
            scenario.staleReads ?? 0,
            !m.withFence,
          ),
          kinds: new Set(scenario.kinds),
          ...(scenario.failsafe ? { failsafe: true } : {}),
          ...(scenario.watchdog ? { watchdog: true } : {}),
          ...(scenario.siteRule ? { siteRule: scenario.siteRule } : {}),
          ...(scenario.settings ? { settings: scenario.settings } : {}),
        };
        let start: { c: ClusterModel; path: Action[] } | undefined;
        if (scenario.schedule) {
          const taken = runSchedule(parseSchedule(scenario.schedule), mode, bounds, mutation);
          if (taken.kind === 'off course') continue;
          if (taken.kind === 'violation')
            return result({
              caught: true,
              mode,
              scenario: scenario.name,
              invariant: taken.violation.invariant,
              message: taken.violation.message,
              steps: taken.path.length,
            });
          // Where the schedule ends is judged for settling too (invariants 4, 6, 7): the search may find too few new states.
          const settledThere = checkProgress(taken.c, bounds, mutation);
          if (settledThere)
            return result({
              caught: true,
              mode,
              scenario: scenario.name,
              invariant: settledThere.invariant,
              message: settledThere.message,
              steps: taken.path.length,
            });
          start = { c: taken.c, path: taken.path };
        }
        const search = breadthFirst({
          mode,
          bounds,
          start,
          maxDepth: 16,
          maxStates: scenario.states ?? budget.scenarioStates,
          progressEvery: SCENARIO_PROGRESS_EVERY,
          mutation,
        });
        transitions += search.transitions;
        if (search.violation)
          return result({
            caught: true,
            mode,
            scenario: scenario.name,
            invariant: search.violation.invariant,
            message: search.violation.message,
            steps: search.violation.path.length,
          });
      }
      const bounds = boundsFor(mode, 2, 1, 3, 1, !m.withFence);
      const search = breadthFirst({
        mode,
        bounds,
        maxDepth: 1000,
        maxStates: budget.states,
        progressEvery: 64,
        mutation,
      });
      transitions += search.transitions;
      if (search.violation)
        return result({
          caught: true,
          mode,
          invariant: search.violation.invariant,
          message: search.violation.message,
          steps: search.violation.path.length,
        });
      const walkBounds = boundsFor(mode, 8, 4, 12, 6, !m.withFence);
      const walks = randomWalks({
        mode,
        bounds: walkBounds,
        walks: budget.walks,
        steps: budget.walkSteps,
        seed: 19,
        mutation,
        weights: MUTANT_WALK_WEIGHTS,
      });
      transitions += walks.steps;
      if (walks.violation) {
        const shrunk = shrink(steadyStart(mode, walkBounds, mutation), walks.violation, walkBounds, mutation);
        return result({
          caught: true,
          mode,
          invariant: shrunk.invariant,
          message: shrunk.message,
          steps: shrunk.path.length,
        });
      }
    }
  } catch (error) {
    return result({ caught: true, mode, invariant: 'model', message: (error as Error).message, steps: undefined });
  }
  return result({});
}

export function describeMutantResult(r: MutantResult): string {
  const m = r.mutant;
  const where = `${m.file}:${m.line} ${m.fn}: ${m.operator} ${m.code}`;
  const cost = `${r.transitions} transitions, ${(r.elapsedMs / 1000).toFixed(1)} s`;
  if (!r.caught) return `SURVIVED ${where} (${cost})`;
  const steps = r.steps !== undefined ? `${r.steps} steps` : 'at once';
  return `caught   ${where}: [${r.mode}${r.scenario ? `, ${r.scenario}` : ''}] ${r.invariant} in ${steps} (${cost})`;
}
