import { ActionKind, Bounds } from '../../../src/model-check/model-types';
import { BROKEN_VARIANTS } from '../../../src/model-check/mutations';
import { breadthFirst, steadyStart } from '../../../src/model-check/search';
import { NODE_NAMES } from '../../../src/model-check/model';
import { checkSiteRule } from '../../../src/model-check/site-rule';
import { checkSiteRuleSettled } from '../../../src/model-check/site-rule-settled';
import { IGNORING_SITES } from '../../../src/model-check/site-rule-variant';
import { checkProgress, fairRound, SETTLE_ROUNDS } from '../../../src/model-check/invariants';
import { ClusterModel } from '../../../src/model-check/model';
import { checkedStep } from '../../../src/model-check/step';
import { checkSyncSettled } from '../../../src/model-check/sync-settled';
import { STRICT_PLACEHOLDER } from '../../../src/postgresql/standby-names';

/** Strict synchronous mode with synchronous_site_count 1: n1 and n2 in dc1, n3 in dc2. */
function bounds(kinds: ActionKind[], faults: number, writes: number, operations = 0): Bounds {
  return { faults, operations, writes, staleReads: 0, kinds: new Set(kinds), modes: ['strict', 'off'], siteRule: 1 };
}

// 20,000 states (every state within 8 or 9 steps) take every kind of step the 80,000 did, and catch the broken variant
// at its 18th to 24th state, in a seventh of the time.
const search = (b: Bounds, mutation = undefined as typeof IGNORING_SITES | undefined) =>
  breadthFirst({ mode: 'strict', bounds: b, maxDepth: 14, maxStates: 20_000, progressEvery: 0, mutation });

describe('invariant 8: an acknowledged commit is on a member of another site (synchronous_site_count)', () => {
  it('the settled cluster lists n3, of dc2, as its synchronous standby', () => {
    const c = steadyStart('strict', bounds(['cycle'], 0, 0));
    expect(c.nodes[0].standbyNames).toBe('n3');
    expect(c.sync?.standbys.map((i) => NODE_NAMES[i])).toEqual(['n3']);
  });

  it('the broken variant (the site rule ignored) is caught: a commit acknowledged by n2 alone', () => {
    expect(BROKEN_VARIANTS.site).toBe(IGNORING_SITES);
    const report = search(bounds(['cycle', 'tick', 'complete', 'write', 'ship'], 0, 1), IGNORING_SITES);
    expect(report.violation?.invariant).toBe('site');
    expect(report.violation!.message).toMatch(/is on n1 \(dc1\), n2 \(dc1\) only/);
    expect(report.violation!.path.map((a) => a.label)).toEqual(['write n1', 'ship n2']);
  });

  it.each([
    [
      "writes while any node's PostgreSQL crashes and is started again, and its agent restarts",
      ['cycle', 'tick', 'complete', 'write', 'ship', 'pgCrash', 'agentRestart'] as ActionKind[],
      2,
      2,
      0,
    ],
    // One write: two unacknowledged writes on n2 alone make n3's promotion two behind it, which invariant 2 flags in
    // strict mode with or without sites (the race in synchronous mode looks only at `/sync` members, as Patroni's).
    [
      'writes across a failover',
      ['cycle', 'tick', 'complete', 'write', 'ship', 'agentCrash', 'pgCrash'] as ActionKind[],
      2,
      1,
      0,
    ],
    [
      'writes across a switchover and the mode turned off and on',
      ['cycle', 'tick', 'complete', 'write', 'ship', 'switchover', 'syncMode'] as ActionKind[],
      0,
      2,
      2,
    ],
  ])('the real planners keep it: %s', (_what, kinds, faults, writes, operations) => {
    const report = search(bounds(kinds, faults, writes, operations));
    expect(report.violation).toBeNull();
    expect(report.states).toBeGreaterThan(100);
  });

  it('is silent without the rule and outside strict mode', () => {
    const c = steadyStart('strict', bounds(['cycle'], 0, 0));
    expect(checkSiteRule({ ...c, siteRule: undefined, acked: { timeline: 1, wal: 5, sync: true } })).toBeNull();
    expect(checkSiteRule({ ...c, mode: 'on', acked: { timeline: 1, wal: 5, sync: true } })).toBeNull();
    expect(checkSiteRule({ ...c, acked: { timeline: 1, wal: 5, sync: true } })?.message).toBe(
      'the acknowledged commit at 1/5 is on no member only: synchronous_site_count 1 wants 2 sites',
    );
  });
});

describe('invariant 8 in quorum mode and in `on` mode: settled, a commit waits for a member of another site whenever one streams', () => {
  const settledBounds = (mode: 'quorum' | 'on', kinds: ActionKind[], faults: number, writes: number): Bounds => ({
    faults,
    operations: 0,
    writes,
    staleReads: 0,
    kinds: new Set(kinds),
    modes: [mode, 'off'],
    siteRule: 1,
  });
  const settledSearch = (mode: 'quorum' | 'on', b: Bounds, mutation?: typeof IGNORING_SITES) =>
    breadthFirst({ mode, bounds: b, maxDepth: 14, maxStates: 4_000, progressEvery: 2, mutation });

  it('quorum mode: the settled cluster waits for ANY 2 of n2 and n3, so every commit reaches n3 in dc2', () => {
    const c = steadyStart('quorum', settledBounds('quorum', ['cycle'], 0, 0));
    expect(c.nodes[0].standbyNames).toBe('ANY 2 (n2,n3)');
    expect(checkSiteRuleSettled(c)).toBeNull();
    // The same cluster waiting for any one of them would let a commit through on n2 alone.
    expect(
      checkSiteRuleSettled({
        ...c,
        nodes: c.nodes.map((n, i) => (i === 0 ? { ...n, standbyNames: 'ANY 1 (n2,n3)' } : n)),
      })?.message,
    ).toBe(
      "settled with n1 (dc1) leading and dc2 streaming, but synchronous_standby_names 'ANY 1 (n2,n3)' lets a commit through on n2: synchronous_site_count 1 wants 1 other site(s)",
    );
  });

  it.each(['quorum', 'on'] as const)(
    '%s mode: the broken variant (the site rule ignored) is caught on the settled start',
    (mode) => {
      const report = settledSearch(mode, settledBounds(mode, ['cycle', 'tick', 'complete'], 0, 0), IGNORING_SITES);
      expect(report.violation?.invariant).toBe('site');
      expect(report.violation!.message).toMatch(
        /lets a commit through on n2: synchronous_site_count 1 wants 1 other site/,
      );
    },
  );

  it.each(['quorum', 'on'] as const)(
    '%s mode: the real planners keep it through up to two faults: a PostgreSQL or agent crash, an agent restart',
    (mode) => {
      const kinds: ActionKind[] = [
        'cycle',
        'tick',
        'complete',
        'write',
        'ship',
        'pgCrash',
        'agentCrash',
        'agentRestart',
      ];
      const report = settledSearch(mode, settledBounds(mode, kinds, 2, 1));
      expect(report.violation).toBeNull();
      expect(report.states).toBeGreaterThan(1_000);
    },
  );
});

describe('invariant 7 in strict mode with sites: the placeholder for a missing site holds commits', () => {
  const strictBounds = (kinds: ActionKind[], faults: number): Bounds => ({
    faults,
    operations: 0,
    writes: 0,
    staleReads: 0,
    kinds: new Set(kinds),
    modes: ['strict', 'off'],
    siteRule: 1,
  });
  const frozen = strictBounds(['cycle', 'tick', 'complete', 'agentFreeze'], 1);

  /** n3, the only member of dc2, has its agent frozen; the cluster then settles (invariant 4 finds the fixed point). */
  const n3Frozen = () =>
    checkedStep(steadyStart('strict', frozen), { kind: 'agentFreeze', node: 2, label: 'agentFreeze n3' }, frozen).next;
  function settledWithoutDc2(): ClusterModel {
    let c = n3Frozen();
    for (let round = 0; round < SETTLE_ROUNDS; round++) c = fairRound(c, frozen);
    return c;
  }

  it('settled without a standby in dc2, n1 waits for n2 and the placeholder: not a standby that does not stream', () => {
    const c = settledWithoutDc2();
    expect(c.nodes[0].standbyNames).toBe(`2 (${STRICT_PLACEHOLDER},n2)`);
    expect(checkSyncSettled(c)).toBeNull();
    // Invariant 4 judges the same settled state (it flagged it before invariant 7 knew the placeholder).
    expect(checkProgress(n3Frozen(), frozen)).toBeNull();
  });

  it('the same cluster letting commits through on n2 alone is flagged', () => {
    const c = settledWithoutDc2();
    const on = (standbyNames: string) => ({
      ...c,
      nodes: c.nodes.map((n, i) => (i === 0 ? { ...n, standbyNames } : n)),
    });
    for (const weaker of ['n2', `1 (${STRICT_PLACEHOLDER},n2)`])
      expect(checkSyncSettled(on(weaker))?.message).toMatch(
        /lets commits through without a standby in each of the 1 other site\(s\) synchronous_site_count requires \(strict mode\)$/,
      );
  });
});
