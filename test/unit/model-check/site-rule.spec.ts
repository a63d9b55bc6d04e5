import { ActionKind, Bounds } from '../../../src/model-check/actions';
import { BROKEN_VARIANTS } from '../../../src/model-check/mutations';
import { breadthFirst, steadyStart } from '../../../src/model-check/search';
import { NODE_NAMES } from '../../../src/model-check/model';
import { checkSiteRule } from '../../../src/model-check/site-rule';
import { IGNORING_SITES } from '../../../src/model-check/site-rule-variant';

/** Strict synchronous mode with synchronous_site_count 1: n1 and n2 in dc1, n3 in dc2. */
function bounds(kinds: ActionKind[], faults: number, writes: number, operations = 0): Bounds {
  return { faults, operations, writes, staleReads: 0, kinds: new Set(kinds), modes: ['strict', 'off'], siteRule: 1 };
}

const search = (b: Bounds, mutation = undefined as typeof IGNORING_SITES | undefined) => breadthFirst({ mode: 'strict', bounds: b, maxDepth: 14, maxStates: 80_000, progressEvery: 0, mutation });

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
    ['writes while n3 crashes and comes back', ['cycle', 'tick', 'complete', 'write', 'ship', 'pgCrash', 'agentRestart'] as ActionKind[], 2, 2, 0],
    // One write: two unacknowledged writes on n2 alone make n3's promotion two behind it, which invariant 2 flags in
    // strict mode with or without sites (the race in synchronous mode looks only at `/sync` members, as Patroni's).
    ['writes across a failover', ['cycle', 'tick', 'complete', 'write', 'ship', 'agentCrash', 'pgCrash'] as ActionKind[], 2, 1, 0],
    ['writes across a switchover and the mode turned off and on', ['cycle', 'tick', 'complete', 'write', 'ship', 'switchover', 'syncMode'] as ActionKind[], 0, 2, 2],
  ])('the real planners keep it: %s', (_what, kinds, faults, writes, operations) => {
    const report = search(bounds(kinds, faults, writes, operations));
    expect(report.violation).toBeNull();
    expect(report.states).toBeGreaterThan(100);
  });

  it('is silent without the rule and outside strict mode', () => {
    const c = steadyStart('strict', bounds(['cycle'], 0, 0));
    expect(checkSiteRule({ ...c, siteRule: undefined, acked: { timeline: 1, wal: 5, sync: true } })).toBeNull();
    expect(checkSiteRule({ ...c, mode: 'on', acked: { timeline: 1, wal: 5, sync: true } })).toBeNull();
    expect(checkSiteRule({ ...c, acked: { timeline: 1, wal: 5, sync: true } })?.message).toBe('the acknowledged commit at 1/5 is on no member only: synchronous_site_count 1 wants 2 sites');
  });
});
