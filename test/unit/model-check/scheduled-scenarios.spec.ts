import { boundsFor } from '../../../src/model-check/bounds';
import { loadDecisionCode } from '../../../src/model-check/mutant-loader';
import { decisionMutants } from '../../../src/model-check/mutants';
import { Bounds, DecisionMutation } from '../../../src/model-check/model-types';
import { BROKEN_VARIANTS } from '../../../src/model-check/mutations';
import { SCENARIOS } from '../../../src/model-check/mutation-scenarios';
import { parseSchedule, runSchedule } from '../../../src/model-check/schedule';
import { breadthFirst } from '../../../src/model-check/search';
import { checkProgress } from '../../../src/model-check/invariants';
import { REAL_DECISION_CODE } from '../../../src/model-check/decision-code';

/** The mutation run's scenario of that name, its bounds and schedule (mutation-run.ts). */
function scenario(name: string, mode: 'off' | 'quorum' | 'strict') {
  const s = SCENARIOS.find((x) => x.name === name)!;
  const bounds: Bounds = {
    ...boundsFor(mode, s.faults ?? 1, s.operations ?? 0, s.writes ?? 1, 0, true),
    kinds: new Set(s.kinds),
  };
  return { bounds, schedule: parseSchedule(s.schedule!) };
}

/** The schedule, then a breadth-first search from where it ends: the first violation, or null. */
function judge(name: string, mode: 'off' | 'quorum' | 'strict', mutation?: DecisionMutation) {
  const { bounds, schedule } = scenario(name, mode);
  const taken = runSchedule(schedule, mode, bounds, mutation);
  if (taken.kind === 'off course') throw new Error(`off course at ${taken.at}`);
  if (taken.kind === 'violation') return { ...taken.violation, path: taken.path.map((a) => a.label) };
  const settled = checkProgress(taken.c, bounds, mutation);
  if (settled) return { ...settled, path: taken.path.map((a) => a.label) };
  const search = breadthFirst({
    mode,
    bounds,
    start: taken,
    maxDepth: 16,
    maxStates: 1_000,
    progressEvery: 16,
    mutation,
  });
  return search.violation && { ...search.violation, path: search.violation.path.map((a) => a.label) };
}

describe('invariant 14: an old primary does not discard a promotion past its timeline (a frozen leader through a failover)', () => {
  const name = 'a frozen leader through a failover';

  it('the real code: n1, back while the key is free, demotes; n3 takes over on timeline 2', () => {
    expect(judge(name, 'off')).toBeNull();
  });

  it('the broken variant (the race reads no /history) lets n1 take the key on timeline 1', () => {
    const v = judge(name, 'off', BROKEN_VARIANTS.timeline);
    expect(v?.invariant).toBe('timeline');
    expect(v!.message).toBe(
      'n1, a running primary on timeline 1, took the leader key although the cluster is on timeline 2: the promotion past it is discarded',
    );
    // Four loop_waits (n2 promoted), n2's agent lost, its key expires, n1's agent back before n3 races.
    expect(v!.path.slice(-2)).toEqual(['agentRestart n1', 'cycle n1']);
    expect(v!.path).toContain('agentCrash n2');
  });
});

describe('invariant 11b: while paused, the running primary takes the free leader key', () => {
  const name = 'a frozen leader through a failover, then paused';
  const notRacingWhilePaused: DecisionMutation = {
    name: 'a paused primary does not race',
    decision: (s, d) =>
      s.config.pause && 'need' in d && d.need === 'acquireLock'
        ? { verdict: 'not racing (broken variant)', actions: [] }
        : d,
  };

  it('the real code: n1, a primary on timeline 1, takes the key (as the reference: in pause the primary is the healthiest)', () => {
    expect(judge(name, 'off')).toBeNull();
  });

  it('a variant that leaves the key free is flagged in the cycle that finds it free', () => {
    const v = judge(name, 'off', notRacingWhilePaused);
    expect(v?.invariant).toBe('pause');
    expect(v!.message).toBe('n1 runs as a primary while paused and finds the leader key free, yet does not take it');
  });
});

describe('invariant 3 in quorum mode: a former leader ahead is not a vote for a member that lacks a commit', () => {
  const name = 'a nofailover leader ahead, cut off and back';

  it('the real code: n2 does not win without n3 or n1 (nofailover), nothing acknowledged is lost', () => {
    expect(judge(name, 'quorum')).toBeNull();
  });

  it("the mutant that counts a peer ahead as a vote (the mutation run's survivor) is caught: n2 wins without the commit", () => {
    const m = decisionMutants().find(
      (x) => x.id === 'ha/sync/sync-eligibility.ts quorumVerdict: skip if (wal > ownWal)',
    )!;
    const v = judge(name, 'quorum', { name: m.id, code: loadDecisionCode(new Map([[m.file, m.source]])) });
    expect(v?.invariant).toBe('sync');
    expect(v!.message).toBe('n2 promoted in synchronous mode without the acknowledged commit at 1/1');
  });
});

describe('invariant 7 where strict mode comes back on without a standby', () => {
  const name = 'strict mode back on without a standby';

  it('the real code: n1 holds commits with the placeholder', () => {
    expect(judge(name, 'strict')).toBeNull();
  });

  it('a planner that leaves the emptied setting alone is flagged: commits go through in strict mode', () => {
    const keepsEmpty: DecisionMutation = {
      name: 'no strict hold',
      code: {
        ...REAL_DECISION_CODE,
        planPriority: (input) =>
          input.strict && input.active.length === 0 ? [] : REAL_DECISION_CODE.planPriority(input),
      },
    };
    const v = judge(name, 'strict', keepsEmpty);
    expect(v?.invariant).toBe('sync-settled');
    expect(v!.message).toMatch(
      /^strict mode without a synchronous standby lets commits through: synchronous_standby_names ''/,
    );
  });
});
