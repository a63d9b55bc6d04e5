import { ActionKind, Bounds, DecisionMutation } from '../../../src/model-check/model-types';
import { ReplicationMode } from '../../../src/model-check/model';
import { BROKEN_VARIANTS } from '../../../src/model-check/mutations';
import { breadthFirst } from '../../../src/model-check/search';

/**
 * Issue 34, part 3: the invariants that the mutation run's survivors asked for, each with a broken variant
 * caught by a small search and the real decision code passing the same search.
 */
const bounds = (
  kinds: ActionKind[],
  faults: number,
  operations: number,
  writes = 0,
  mode?: ReplicationMode,
): Bounds => ({
  faults,
  operations,
  writes,
  staleReads: 0,
  kinds: new Set(kinds),
  modes: [mode ?? 'off'],
});

/** The named candidate never takes the key a leader gave up for it. */
const CANDIDATE_NOT_RACING: DecisionMutation = {
  name: 'a named candidate that does not race',
  decision: (s, d) =>
    'need' in d && d.need === 'acquireLock' && s.cluster?.failover?.value.member === s.local.name
      ? { verdict: 'not racing (broken variant)', actions: [] }
      : d,
};

/** Members other than the named candidate race as if no member were named. */
const IGNORING_THE_CANDIDATE: DecisionMutation = {
  name: 'racing past the named candidate',
  snapshot: (s) => {
    const failover = s.cluster?.failover;
    if (!failover?.value.member || failover.value.member === s.local.name) return s;
    const { member: _named, ...rest } = failover.value;
    return { ...s, cluster: { ...s.cluster!, failover: { ...failover, value: rest } } };
  },
};

const cases: {
  name: string;
  invariant: string;
  message: RegExp;
  variant: DecisionMutation;
  mode: ReplicationMode;
  bounds: Bounds;
  progressEvery?: number;
}[] = [
  {
    name: '10: stepping down for a switchover to a member whose agent is frozen',
    invariant: 'request',
    message: /^n1 stepped down for a switchover to n[23] although no member could take over$/,
    variant: BROKEN_VARIANTS.request,
    mode: 'off',
    bounds: bounds(['cycle', 'tick', 'complete', 'agentFreeze', 'switchover'], 1, 1),
  },
  {
    name: '11: a paused leader whose PostgreSQL crashed keeps the key',
    invariant: 'pause',
    message: /^n1 keeps the leader key while paused although its PostgreSQL is crashed$/,
    variant: BROKEN_VARIANTS.pause,
    mode: 'off',
    bounds: bounds(['cycle', 'tick', 'complete', 'pause', 'pgCrash'], 1, 1),
  },
  {
    name: '10b: another member wins the race a switchover to n2 asked for',
    invariant: 'request',
    message: /^n3 won the leader race although the switchover names n2, which answers its probe$/,
    variant: IGNORING_THE_CANDIDATE,
    mode: 'off',
    bounds: bounds(['cycle', 'tick', 'complete', 'switchover'], 0, 1),
  },
  {
    name: '6b: a switchover whose candidate never takes the key',
    invariant: 'availability',
    message: /^the cluster settled without a leader, a switchover pending, although n[23] \(WAL 1\/0\) may take over$/,
    variant: CANDIDATE_NOT_RACING,
    mode: 'off',
    bounds: bounds(['cycle', 'tick', 'complete', 'switchover'], 0, 1),
    progressEvery: 1,
  },
];

const search = (mode: ReplicationMode, b: Bounds, mutation?: DecisionMutation, progressEvery = 0) =>
  breadthFirst({ mode, bounds: b, maxDepth: 15, maxStates: 20_000, progressEvery, mutation });

describe('the invariants of the race and of the answers to requests', () => {
  it.each(cases)(
    '$name: the broken variant is caught',
    ({ invariant, message, variant, mode, bounds: b, progressEvery }) => {
      const report = search(mode, b, variant, progressEvery);
      expect(report.violation?.invariant).toBe(invariant);
      expect(report.violation!.message).toMatch(message);
      expect(report.violation!.path.length).toBeLessThanOrEqual(15);
    },
  );

  it.each(cases)('$name: the real decision code passes the same search', ({ mode, bounds: b, progressEvery }) => {
    const report = search(mode, b, undefined, progressEvery);
    expect(report.violation).toBeNull();
    expect(report.states).toBeGreaterThan(50);
  });
});
