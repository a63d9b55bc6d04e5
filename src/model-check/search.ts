import { enabledActions } from './actions';
import { Action, ACTION_KINDS, ActionKind, Bounds, DecisionMutation, Violation } from './model-types';
import { checkProgress, exemptWriters, fairRound } from './invariants';
import { bootstrappedCluster, ClusterModel, ReplicationMode, stateKey } from './model';
import { checkedStep } from './step';
import { DiskLevel, Level, MemoryLevel } from './levels';
import { FingerprintSet, KeySet, StateStore } from './state-store';
import { Checkpoints } from './checkpoint';
import { canonicalKey } from './symmetry';
import { actionCode, PathTable } from './path-table';

export interface SearchOptions {
  mode: ReplicationMode;
  bounds: Bounds;
  /** Stop after this many steps from the start (BFS levels). */
  maxDepth: number;
  /** Stop once this many distinct states are known. */
  maxStates: number;
  /** Judge invariant 4 (progress) on every n-th new state; 0: never. */
  progressEvery: number;
  mutation?: DecisionMutation;
  /** Told after each level: every state within `depth` steps was found. */
  onLevel?(depth: number, states: number, transitions: number, elapsedMs: number): void;
  /** Count states that differ only by the nodes' names as one (symmetry.ts); default on. */
  symmetry?: boolean;
  /** Where the search starts, and the steps that led there from the steady start (a scenario's schedule); the steady start when absent. */
  start?: { c: ClusterModel; path: Action[] };
  /** For millions of states: fingerprints instead of keys (state-store.ts) and each level on disk (levels.ts). */
  compact?: boolean;
  /** A directory to keep a checkpoint in after each level (checkpoint.ts), and to resume from if it holds one; implies compact. */
  checkpoint?: string;
}

export interface FoundViolation extends Violation {
  /** The steps from the start, the last one reaching (or being) the violation. */
  path: Action[];
}

export interface SearchReport {
  mode: ReplicationMode;
  states: number;
  transitions: number;
  /** Every state up to this many steps from the start was found (all of their successors were generated)... */
  depth: number;
  /** ...and some states one step deeper; `exhausted`: nothing new lay deeper (within maxDepth). */
  partialLevel: boolean;
  exhausted: boolean;
  elapsedMs: number;
  /** How often each kind of step was taken. */
  coverage: Record<ActionKind, number>;
  progressChecks: number;
  /** Distinct states where a primary runs that neither its agent nor its fence can stop: invariant 1's one exemption. */
  exempt: number;
  violation: FoundViolation | null;
}

/** The cluster after bootstrap, settled by the fault-free schedule: where every search starts. */
export function steadyStart(mode: ReplicationMode, bounds: Bounds, mutation?: DecisionMutation): ClusterModel {
  let c = bootstrappedCluster(mode, !bounds.fenceless);
  if (bounds.siteRule) c.siteRule = bounds.siteRule;
  if (bounds.failsafe) c.failsafe = true;
  if (bounds.settings) {
    c.settings = bounds.settings;
    if (bounds.settings.noSync !== undefined) c.nodes[bounds.settings.noSync].noSync = true;
  }
  let key = stateKey(c);
  for (let round = 0; round < 24; round++) {
    c = fairRound(c, bounds, mutation);
    const next = stateKey(c);
    if (next === key) return c;
    key = next;
  }
  return c;
}

/** What a checkpoint must have been made by: the options that shape the search, and where it starts. */
function searchIdentity(options: SearchOptions, start: ClusterModel): string {
  const { mode, bounds, maxDepth, maxStates, progressEvery, symmetry } = options;
  const sets = (_: string, value: unknown) => (value instanceof Set ? [...(value as Set<string>)].sort() : value);
  return JSON.stringify({ mode, bounds, maxDepth, maxStates, progressEvery, symmetry, start: stateKey(start) }, sets);
}

const emptyCoverage = () => Object.fromEntries(ACTION_KINDS.map((k) => [k, 0])) as Record<ActionKind, number>;

/** Breadth-first search with state hashing: the first violation found has a shortest path. */
export function breadthFirst(options: SearchOptions): SearchReport {
  let started = Date.now();
  const { bounds, mutation } = options;
  const start = options.start?.c ?? steadyStart(options.mode, bounds, mutation);
  const prefix = options.start?.path ?? [];
  const keyOf = options.symmetry === false ? stateKey : canonicalKey;
  if (options.checkpoint && mutation) throw new Error('a search with a mutation keeps no checkpoint');
  const checkpoints = options.checkpoint ? new Checkpoints(options.checkpoint, searchIdentity(options, start)) : null;
  const compact = options.compact || checkpoints !== null;
  let seen: StateStore = compact ? new FingerprintSet() : new KeySet();
  seen.add(keyOf(start));
  const newLevel = (): Level => (compact ? new DiskLevel(undefined, checkpoints?.levelDir) : new MemoryLevel());
  let paths = new PathTable();
  paths.push(-1, 0);
  let coverage = emptyCoverage();
  // The level being expanded and the one being filled, each discarded (its file removed) however the search ends.
  const resumed = checkpoints?.resume();
  const levels: { frontier: Level; next: Level | null } = { frontier: resumed?.frontier ?? newLevel(), next: null };
  if (!resumed) levels.frontier.push(start, 0);
  let transitions = 0;
  let depth = 0;
  let progressChecks = 0;
  let exempt = 0;
  let newInLevel = 1;
  if (resumed) {
    ({ seen, paths } = resumed);
    ({ depth, transitions, progressChecks, exempt, coverage, newInLevel } = resumed.progress);
    started -= resumed.progress.elapsedMs;
  }
  const report = (violation: FoundViolation | null, exhausted: boolean, partialLevel = false): SearchReport => ({
    mode: options.mode,
    states: seen.size,
    transitions,
    depth,
    partialLevel,
    exhausted,
    elapsedMs: Date.now() - started,
    coverage,
    progressChecks,
    exempt,
    violation,
  });
  const pathTo = (id: number, last?: Action): Action[] => [...prefix, ...paths.pathTo(id), ...(last ? [last] : [])];
  try {
    while (levels.frontier.length > 0 && depth < options.maxDepth) {
      const level = (levels.next = newLevel());
      newInLevel = 0;
      for (const { c, id } of levels.frontier.entries()) {
        for (const action of enabledActions(c, bounds)) {
          const step = checkedStep(c, action, bounds, mutation);
          transitions++;
          coverage[action.kind]++;
          if (step.violation) return report({ ...step.violation, path: pathTo(id, action) }, false);
          if (!seen.add(keyOf(step.next))) continue;
          const nextId = seen.size - 1;
          newInLevel++;
          paths.push(id, actionCode(action));
          // The last level's states are judged (above) but never expanded: no need to keep them.
          if (depth + 1 < options.maxDepth) level.push(step.next, nextId);
          if (exemptWriters(step.next) > 0) exempt++;
          if (options.progressEvery > 0 && nextId % options.progressEvery === 0) {
            progressChecks++;
            const stuck = checkProgress(step.next, bounds, mutation);
            if (stuck) return report({ ...stuck, path: pathTo(nextId) }, false);
          }
          if (seen.size >= options.maxStates) return report(null, false, true);
        }
      }
      levels.frontier.discard();
      levels.frontier = level;
      levels.next = null;
      depth++;
      const elapsedMs = Date.now() - started;
      if (checkpoints) {
        const progress = { depth, transitions, progressChecks, exempt, coverage, elapsedMs, newInLevel };
        checkpoints.save(progress, seen as FingerprintSet, paths, level as DiskLevel);
      }
      options.onLevel?.(depth, seen.size, transitions, elapsedMs);
    }
    return report(null, newInLevel === 0);
  } finally {
    levels.frontier.discard();
    levels.next?.discard();
  }
}

/** A small seeded generator (mulberry32): the same seed walks the same way. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface WalkOptions {
  mode: ReplicationMode;
  bounds: Bounds;
  walks: number;
  steps: number;
  seed: number;
  mutation?: DecisionMutation;
  /** How much likelier a kind of step is than another (1 when not given): uniform when absent. */
  weights?: Partial<Record<ActionKind, number>>;
}

/** Picks one of `actions`, each as likely as its kind's weight. */
function pick(actions: Action[], random: () => number, weights?: Partial<Record<ActionKind, number>>): Action {
  if (!weights) return actions[Math.floor(random() * actions.length)];
  const total = actions.reduce((sum, a) => sum + (weights[a.kind] ?? 1), 0);
  let at = random() * total;
  for (const a of actions) {
    at -= weights[a.kind] ?? 1;
    if (at < 0) return a;
  }
  return actions[actions.length - 1];
}

export interface WalkReport {
  mode: ReplicationMode;
  walks: number;
  steps: number;
  maxDepth: number;
  elapsedMs: number;
  coverage: Record<ActionKind, number>;
  /** Steps that reached a state with an exempt writer (agent and fence both gone). */
  exempt: number;
  violation: (FoundViolation & { seed: number }) | null;
}

/** Seeded random walks, far deeper than the exhaustive search; each ends with the progress check. */
export function randomWalks(options: WalkOptions): WalkReport {
  const started = Date.now();
  const { bounds, mutation } = options;
  const start = steadyStart(options.mode, bounds, mutation);
  const coverage = emptyCoverage();
  let steps = 0;
  let exempt = 0;
  const done = (violation: WalkReport['violation'], walks: number): WalkReport => ({
    mode: options.mode,
    walks,
    steps,
    maxDepth: options.steps,
    elapsedMs: Date.now() - started,
    coverage,
    exempt,
    violation,
  });
  for (let w = 0; w < options.walks; w++) {
    const seed = options.seed + w;
    const random = seededRandom(seed);
    let c = start;
    const path: Action[] = [];
    for (let s = 0; s < options.steps; s++) {
      const actions = enabledActions(c, bounds);
      const action = pick(actions, random, options.weights);
      const step = checkedStep(c, action, bounds, mutation);
      steps++;
      coverage[action.kind]++;
      path.push(action);
      if (step.violation) return done({ ...step.violation, path, seed }, w + 1);
      if (exemptWriters(step.next) > 0) exempt++;
      c = step.next;
    }
    const stuck = checkProgress(c, bounds, mutation);
    if (stuck) return done({ ...stuck, path, seed }, w + 1);
  }
  return done(null, options.walks);
}
