import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EXPLAINED_SURVIVORS } from '../../../src/model-check/equivalent-mutants';
import { loadDecisionCode, sourceRoot } from '../../../src/model-check/mutant-loader';
import { decisionMutants, Mutant } from '../../../src/model-check/mutants';
import { runMutant } from '../../../src/model-check/mutation-run';
import { primarySample, snapshot } from '../ha/snapshot-factory';

/**
 * The bounded part of `npm run model-check -- --mutants` that CI runs: the mutants are found in the
 * real files, a mutant's copy of the decision code answers differently from the real one, and a
 * sample of mutants (one of each kind: an ending action removed, a race check skipped or inverted,
 * the sync rule, a liveness check, the sync planner, a switchover's candidate check, the fence's margin) is caught. About 15 s on an idle machine.
 */
const mutants = decisionMutants();
const byId = (id: string): Mutant => {
  const m = mutants.find((x) => x.id === id);
  if (!m) throw new Error(`no mutant ${id}`);
  return m;
};

describe('the mutants of the decision code', () => {
  it('are found in decide.ts, the race, the sync planners and the fence margin, each a one-place edit', () => {
    const files = new Set(mutants.map((m) => m.file));
    expect([...files]).toEqual(
      expect.arrayContaining([
        'ha/decide.ts',
        'ha/recover.ts',
        'ha/leader-race.ts',
        'ha/sync/sync-eligibility.ts',
        'ha/sync/priority-plan.ts',
        'ha/sync/quorum-plan.ts',
        'ha/leader-lock.ts',
      ]),
    );
    // Every demote, releaseLock and killPostgres of decide.ts is one mutant.
    const decide = readFileSync(join(sourceRoot(), 'ha/decide.ts'), 'utf8');
    // OFFLINE_DEMOTE's definition is no action of a decision; its two uses are.
    const ending =
      (decide.match(/type: '(demote|releaseLock|killPostgres)'/g) ?? []).length -
      1 +
      (decide.match(/actions: \[OFFLINE_DEMOTE\]/g) ?? []).length;
    expect(mutants.filter((m) => m.file === 'ha/decide.ts' && m.operator === 'remove')).toHaveLength(ending);
    for (const m of mutants) expect(m.source).not.toBe(readFileSync(join(sourceRoot(), m.file), 'utf8'));
    expect(new Set(mutants.map((m) => m.id)).size).toBe(mutants.length);
  });

  it("a mutant's copy of the decision code decides differently; the real code is left as it was", () => {
    const m = byId('ha/decide.ts dcsUnreachable: remove OFFLINE_DEMOTE');
    const code = loadDecisionCode(new Map([[m.file, m.source]]));
    const cutOff = snapshot({
      cluster: null,
      dcsError: 'timeout',
      local: { role: 'primary', sample: primarySample() },
    });
    const mutated = code.decide(cutOff);
    expect(mutated).toMatchObject({
      verdict: 'demoted self because DCS is not accessible and I was a leader',
      actions: [],
    });
    const real = loadDecisionCode(new Map()).decide(cutOff);
    expect(real).toMatchObject({ actions: [{ type: 'demote', mode: 'fast' }] });
  });

  it('every survivor explained in equivalent-mutants.ts is a mutant that exists (no stale reason)', () => {
    const ids = new Set(mutants.map((m) => m.id));
    expect(Object.keys(EXPLAINED_SURVIVORS).filter((id) => !ids.has(id))).toEqual([]);
  });

  // The mode each is caught in first: the full run tries the others before it.
  const budget = { states: 300, scenarioStates: 2_500, walks: 5, walkSteps: 100 };
  it.each([
    ['ha/decide.ts dcsUnreachable: remove OFFLINE_DEMOTE', 'off', 'lease'],
    [
      "ha/decide.ts followLeader: remove { type: 'demote', mode: 'immediate', restart: true, upstream }",
      'off',
      'lease',
    ],
    ['ha/leader-race.ts healthiest: skip if (isNoFailover(local.tags))', 'off', 'promotion'],
    ['ha/leader-race.ts healthiest: invert if (pgIsPrimary)', 'off', 'race'],
    // The sync rule inverted bars every /sync member: the cluster settles without a leader.
    [
      'ha/sync/sync-eligibility.ts barredBySync: invert return !syncNames(s.cluster!.sync!.value, name, true)',
      'on',
      'availability',
    ],
    // Inverted, the manual-failover exception waives the sync rule whenever no such failover is pending: a standby /sync does not name wins.
    [
      'ha/sync/sync-eligibility.ts barredBySync: invert if (failover && !failover.leader && !failover.site)',
      'on',
      'sync',
    ],
    // Liveness (issue 34): the race's pause check inverted bars every member; the cluster settles without a leader.
    ['ha/leader-race.ts healthiest: invert if (config.pause) #2', 'off', 'availability'],
    // The priority planner never changes synchronous_standby_names: the settled cluster has no synchronous standby.
    ['ha/sync/priority-plan.ts planPriority: invert if (value !== currentValue)', 'on', 'sync-settled'],
    // Issue 34, part 3: the leader steps down for a switchover to a member whose agent is frozen (invariant 10).
    ['ha/leader-race.ts goodCandidates: drop peer.reachable', 'off', 'request'],
    [
      'ha/leader-lock.ts fenceSafetyMarginMs: negate return Math.max(2, Math.min(5, ttlSeconds * 0.25)) * 1000',
      'off',
      'lease',
    ],
  ] as const)('%s is caught (%s, invariant %s)', (id, mode, invariant) => {
    const r = runMutant(byId(id), budget, [mode]);
    expect(r).toMatchObject({ caught: true, invariant });
    expect(r.steps).toBeLessThanOrEqual(20);
  });
});
