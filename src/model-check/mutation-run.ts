import { ActionKind, Bounds, DecisionMutation } from './model-types';
import { boundsFor } from './bounds';
import { FAULT_SCENARIOS } from './fault-scenarios';
import { ReplicationMode } from './model';
import { loadDecisionCode } from './mutant-loader';
import { Mutant } from './mutants';
import { checkProgress } from './invariants';
import { breadthFirst, randomWalks, steadyStart } from './search';
import { shrink } from './shrink';
import { checkQuorumResolver } from './quorum-resolver-check';

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

/**
 * Small searches that reach deep: each takes a few kinds of step only, so that breadth-first search
 * gets 8 to 16 steps down (a leader lost, its lease run out, the race run) where the search over
 * every kind stops at 3 or 4. One write, one fault (two agent freezes), one operator action, one
 * stale read at most; the targeted ones after them give what a single rule needs (issue 34): two
 * writes for a lag past maximum_lag_on_failover, a stale read decided on after the lease ran out, an
 * operator's request together with a fault, a primary that answers while its key is gone.
 */
export const SCENARIOS: {
  name: string;
  kinds: ActionKind[];
  faults?: number;
  operations?: number;
  staleReads?: number;
  writes?: number;
  states?: number;
  failsafe?: boolean;
  watchdog?: boolean;
  /** `synchronous_site_count`, with the members placed in sites (site-rule.ts). */
  siteRule?: number;
  /** The modes it runs in (all when absent). */
  modes?: ReplicationMode[];
}[] = [
  { name: 'two agents frozen', kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'agentFreeze'], faults: 2 },
  { name: 'leader cut from the DCS', kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'dcsCut'] },
  { name: 'a stale read', kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'read', 'dcsCut'], staleReads: 1 },
  { name: 'PostgreSQL crash', kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'pgCrash'] },
  { name: 'agent crash', kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'agentCrash', 'agentRestart'] },
  {
    name: 'operator',
    kinds: [
      'cycle',
      'tick',
      'complete',
      'write',
      'ship',
      'agentFreeze',
      'switchover',
      'switchoverAny',
      'failover',
      'noFailover',
      'failoverPriority',
      'pause',
    ],
    operations: 1,
  },
  // The lag shows 12 steps down (two writes, one shipped, both other agents frozen, their keys run out): 30,000 states reach it.
  {
    name: 'two writes of lag',
    kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'agentFreeze'],
    faults: 2,
    writes: 2,
    states: 30_000,
  },
  {
    name: 'a stale read past the lease',
    kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'read', 'agentFreeze', 'agentRestart'],
    staleReads: 1,
  },
  {
    name: 'a request and a crash',
    kinds: [
      'cycle',
      'tick',
      'complete',
      'write',
      'ship',
      'agentCrash',
      'agentRestart',
      'pgCrash',
      'switchover',
      'switchoverAny',
      'failover',
    ],
    operations: 1,
  },
  {
    name: 'a request and a freeze',
    kinds: [
      'cycle',
      'tick',
      'complete',
      'ship',
      'agentFreeze',
      'agentRestart',
      'switchover',
      'switchoverAny',
      'failover',
      'noFailover',
    ],
    operations: 2,
    writes: 0,
  },
  {
    name: 'a primary without its key',
    kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'dcsCut', 'dcsHeal', 'pause', 'resume'],
    operations: 2,
  },
  ...FAULT_SCENARIOS,
  // Issue 34, part 3: the race among equals and the answers to requests, each given what its rule needs.
  // Both replicas hold the write and one is tagged failover_priority 2 when the leader's agent dies (invariant 2c).
  {
    name: 'failover_priority among equals',
    kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'agentCrash', 'failoverPriority'],
    operations: 1,
    states: 30_000,
  },
  // A switchover or failover asked for while the candidates lag two writes behind (invariant 10).
  {
    name: 'a request with lag',
    kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'switchover', 'switchoverAny', 'failover'],
    operations: 1,
    writes: 2,
  },
  // A manual failover or switchover to a member while paused: the candidate takes over nonetheless (invariant 6b).
  {
    name: 'a request while paused',
    kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'pause', 'switchover', 'failover'],
    operations: 2,
    states: 1_000,
  },
  // A switchover away from a leader tagged failover_priority 2: the race passes over the leader that stepped
  // down, whose equal WAL and higher priority would otherwise bar everybody (invariant 6b, 9 steps).
  {
    name: 'a switchover from a preferred leader',
    kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'switchoverAny', 'failoverPriority'],
    operations: 2,
    states: 3_000,
  },
  // Members in two sites with synchronous_site_count 1 (n1 and n2 in dc1, n3 in dc2): the planners' site rule (invariant 8),
  // and in strict mode the placeholder that holds commits while dc2 has no standby (invariant 7).
  {
    name: 'members in two sites',
    kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'agentFreeze'],
    siteRule: 1,
    modes: ['on', 'strict', 'quorum'],
  },
  // Quorum mode's vote count: the leader's agent frozen after a write one standby holds, the other tagged nofailover.
  {
    name: 'a frozen leader, a member nofailover',
    kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'agentFreeze', 'noFailover'],
    operations: 1,
  },
  // A stale read decided on once the lease ran out, without writes: 10 steps deep, within 2,000 states.
  {
    name: 'a stale read past the lease, no writes',
    kinds: ['cycle', 'tick', 'complete', 'read', 'agentFreeze', 'agentRestart'],
    staleReads: 1,
    writes: 0,
    states: 2_000,
  },
  // A promotion interrupted: a replica takes the key, its agent dies before it promotes, and it comes back
  // paused (invariant 11; 12 steps, within 5,000 states) or tagged nofailover (it must hand the key on; 13 steps).
  {
    name: 'an interrupted promotion, paused',
    kinds: ['cycle', 'tick', 'complete', 'pause', 'pgCrash', 'agentCrash', 'agentRestart'],
    faults: 2,
    operations: 1,
    writes: 0,
    states: 5_000,
  },
  {
    name: 'an interrupted promotion, nofailover',
    kinds: ['cycle', 'tick', 'complete', 'noFailover', 'agentCrash', 'agentRestart'],
    faults: 2,
    operations: 1,
    writes: 0,
    states: 3_000,
  },
];

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
        const resolver = checkQuorumResolver(mutation.code!.quorumTransitions);
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
        };
        const search = breadthFirst({
          mode,
          bounds,
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
