import {
  DYNAMIC_CONFIG_DEFAULTS,
  effectiveDynamicConfig,
  validateDynamicConfigKeys,
} from '../../../../src/config/dynamic-config';
import { reviewConfigWrite } from '../../../../src/config/config-write-review';
import { planPriority, SyncStep } from '../../../../src/ha/sync/priority-plan';
import { planQuorum } from '../../../../src/ha/sync/quorum-plan';
import { holdForSites, quorumCountForSites, siteRepresentatives } from '../../../../src/ha/sync/site-placement';
import { pickSynchronous, SyncCandidate } from '../../../../src/ha/sync/sync-candidates';
import { parseStandbyNames, STRICT_PLACEHOLDER } from '../../../../src/postgresql/standby-names';

const PH = STRICT_PLACEHOLDER;

/** Standbys in the order syncCandidates gives them (best first): `name@site`, a bare name has no site. */
function standbys(...specs: string[]): SyncCandidate[] {
  return specs.map((spec, i) => {
    const [name, site] = spec.split('@');
    return { name, syncState: 'async', lsn: 1000 - i, noFailover: false, syncPriority: 1, ...(site ? { site } : {}) };
  });
}

function pick(
  mode: 'on' | 'quorum',
  nodeCount: number,
  siteCount: number,
  strict: boolean,
  leaderSite: string | undefined,
  ...specs: string[]
) {
  const config = {
    synchronous_mode: mode,
    synchronous_node_count: nodeCount,
    maximum_lag_on_syncnode: -1,
    synchronous_site_count: siteCount,
    synchronous_mode_strict: strict,
  };
  return pickSynchronous(standbys(...specs), new Set(), 1000, config, 0, leaderSite);
}

describe('synchronous_site_count: which standbys are listed (pickSynchronous)', () => {
  it.each([
    // what, node count, site count, strict, leader site, standbys best first -> listed, sites missing
    ['rule off: the best standby, wherever it is', 1, 0, false, 'dc1', ['b@dc1', 'c@dc2'], ['b'], 0],
    [
      'one other site: its best standby goes before a better one of the leader site',
      1,
      1,
      false,
      'dc1',
      ['b@dc1', 'c@dc2', 'd@dc2'],
      ['c'],
      0,
    ],
    [
      'two standbys wanted: the other site first, then the best',
      2,
      1,
      false,
      'dc1',
      ['b@dc1', 'c@dc2', 'd@dc2'],
      ['c', 'b'],
      0,
    ],
    [
      'two other sites: one standby of each, at least two listed',
      1,
      2,
      false,
      'dc1',
      ['b@dc1', 'c@dc2', 'd@dc3'],
      ['c', 'd'],
      0,
    ],
    [
      'no standby elsewhere, not strict: the leader site standby, rule reported unmet',
      1,
      1,
      false,
      'dc1',
      ['b@dc1'],
      ['b'],
      1,
    ],
    [
      'no standby elsewhere, strict: the placeholder waits for the missing site',
      1,
      1,
      true,
      'dc1',
      ['b@dc1'],
      ['b', PH],
      1,
    ],
    ['one of two sites there, strict', 1, 2, true, 'dc1', ['b@dc1', 'c@dc2'], ['c', 'b', PH], 1],
    ['a standby without a site never counts as elsewhere', 1, 1, true, 'dc1', ['b', 'c@dc1'], ['b', PH], 1],
    ['a leader without a site cannot tell who is elsewhere', 1, 1, true, undefined, ['b@dc1', 'c@dc2'], ['b', PH], 1],
    ['strict with no standby at all: nothing listed (planPriority holds)', 1, 1, true, 'dc1', [], [], 1],
  ] as [string, number, number, boolean, string | undefined, string[], string[], number][])(
    '%s',
    (_what, nodeCount, siteCount, strict, leaderSite, specs, listed, missing) => {
      const picked = pick('on', nodeCount, siteCount, strict, leaderSite, ...specs);
      expect(picked.active).toEqual(listed);
      expect(picked.sitesMissing).toBe(missing);
    },
  );

  it.each([
    // node count, site count, leader site, standbys -> ANY n wanted (null: rule unmet)
    [1, 1, 'dc1', ['b@dc1', 'c@dc2'], 2],
    [1, 1, 'dc1', ['b@dc1', 'c@dc1', 'd@dc2', 'e@dc2'], 3],
    [1, 1, 'dc1', ['b@dc2', 'c@dc2'], 1],
    [3, 1, 'dc1', ['b@dc1', 'c@dc2', 'd@dc2'], 3],
    [1, 2, 'dc1', ['b@dc1', 'c@dc2', 'd@dc2', 'e@dc3'], 4],
    [1, 2, 'dc1', ['c@dc2', 'e@dc3'], 2],
    [1, 1, 'dc1', ['b', 'c@dc2'], 2],
    [1, 1, 'dc1', ['b@dc1', 'c@dc1'], null],
  ] as [number, number, string, string[], number | null][])(
    'quorum, %i node(s) and %i site(s) from %s over %j: ANY %p',
    (nodeCount, siteCount, leaderSite, specs, wanted) => {
      const picked = pick('quorum', nodeCount, siteCount, true, leaderSite, ...specs);
      expect(picked.active).toEqual(specs.map((spec) => spec.split('@')[0]));
      if (wanted === null) expect(picked.sitesMissing).toBe(1);
      else expect([picked.syncWanted, picked.sitesMissing]).toEqual([wanted, 0]);
    },
  );

  it.each([
    // node count, standbys (`!`: nofailover) -> listed, ANY n
    ['the other site has only a nofailover standby: it is listed, ANY 2', 1, ['b@dc1', 'c@dc2!'], ['b', 'c'], 2],
    ['it comes first: listed as before, ANY 2', 1, ['c@dc2!', 'b@dc1'], ['c', 'b'], 2],
    ['the other site is reached already: the nofailover one only fills up', 1, ['b@dc2', 'c@dc2!'], ['b'], 1],
    ['rule off: the nofailover one only fills up', 1, ['b@dc1', 'c@dc2!'], ['b'], 1],
  ] as [string, number, string[], string[], number][])(
    'quorum with a nofailover standby: %s',
    (what, nodeCount, specs, listed, wanted) => {
      const candidates = standbys(...specs.map((spec) => spec.replace('!', '')));
      specs.forEach((spec, i) => (candidates[i].noFailover = spec.endsWith('!')));
      const config = {
        synchronous_mode: 'quorum' as const,
        synchronous_node_count: nodeCount,
        maximum_lag_on_syncnode: -1,
        synchronous_site_count: what.startsWith('rule off') ? 0 : 1,
        synchronous_mode_strict: false,
      };
      const picked = pickSynchronous(candidates, new Set(), 1000, config, 0, 'dc1');
      expect([picked.active, picked.syncWanted, picked.sitesMissing]).toEqual([listed, wanted, 0]);
    },
  );

  it('any ANY k quorumCountForSites gives reaches the required sites, and k - 1 need not', () => {
    const sites = ['dc1', 'dc2', 'dc3', undefined];
    // Every list of up to 5 standbys over these sites (leader in dc1), for 1 and 2 required sites.
    const lists: (string | undefined)[][] = [[]];
    for (let size = 1; size <= 5; size++)
      for (const list of lists.filter((l) => l.length === size - 1))
        for (const site of sites) lists.push([...list, site]);
    for (const list of lists) {
      const listed = list.map((site, i) => ({ name: `s${i}`, ...(site ? { site } : {}) }));
      for (const required of [1, 2]) {
        const k = quorumCountForSites(listed, 'dc1', required);
        const subsets = (n: number) =>
          listed
            .reduce<(typeof listed)[]>((all, s) => [...all, ...all.map((x) => [...x, s])], [[]])
            .filter((x) => x.length === n);
        const reach = (set: typeof listed) =>
          new Set(set.map((s) => s.site).filter((site) => site && site !== 'dc1')).size;
        const otherSites = reach(listed);
        if (k === null) {
          expect(otherSites).toBeLessThan(required);
          continue;
        }
        for (const acknowledgers of subsets(k)) expect(reach(acknowledgers)).toBeGreaterThanOrEqual(required);
        if (k > 1) expect(subsets(k - 1).some((acknowledgers) => reach(acknowledgers) < required)).toBe(true);
      }
    }
  });

  it('siteRepresentatives takes the first standby of each site in order', () => {
    const { representatives, missing } = siteRepresentatives(standbys('b@dc1', 'c@dc3', 'd@dc2', 'e@dc3'), 'dc1', 3);
    expect([representatives.map((s) => s.name), missing]).toEqual([['c', 'd'], 1]);
  });
});

const shape = (steps: SyncStep[]) =>
  steps.map((step) =>
    step.type === 'writeSync'
      ? `sync=${step.standbys.join(',') || '-'}`
      : step.type === 'setStandbyNames'
        ? `ssn=${step.value || "''"}`
        : step.type,
  );

describe('synchronous_site_count: the planners never weaken a strict rule', () => {
  it.each([
    // what, /sync, synchronous_standby_names, listed, confirmed, sites missing -> steps
    ['other site healthy: its standby is the synchronous one', [], '', ['c'], [], 0, ['ssn=c', 'recheck']],
    ['its standby confirmed: into /sync', [], 'c', ['c'], ['c'], 0, ['sync=c']],
    [
      'the other site gone (strict): the leader site standby listed with the placeholder; a recheck for b only',
      ['c'],
      'c',
      ['b', PH],
      [],
      1,
      ['sync=-', `ssn=2 (${PH},b)`, 'recheck'],
    ],
    [
      'then b confirmed: /sync names it, commits still wait for the placeholder',
      [],
      `2 (${PH},b)`,
      ['b', PH],
      ['b'],
      1,
      ['sync=b'],
    ],
    ['steady while the site is away', ['b'], `2 (${PH},b)`, ['b', PH], ['b'], 1, []],
    ['the other site back', ['b'], `2 (${PH},b)`, ['c'], [], 0, ['sync=-', 'ssn=c', 'recheck']],
    [
      'no standby at all (strict): the last voter of the leader site kept, with the placeholder',
      ['b'],
      'b',
      [],
      [],
      1,
      [`ssn=2 (${PH},b)`, 'strictHold'],
    ],
    ['no standby at all and no voter: the placeholder alone', [], '', [], [], 1, [`ssn=${PH}`, 'strictHold']],
  ] as [string, string[], string, string[], string[], number, string[]][])(
    'priority: %s',
    (_what, voters, ssn, active, confirmed, sitesMissing, expected) => {
      const steps = planPriority({
        voters,
        currentValue: ssn,
        standbyNames: parseStandbyNames(ssn),
        active,
        confirmed,
        strict: true,
        sitesMissing,
      });
      expect(shape(steps)).toEqual(expected);
    },
  );

  it.each([
    [
      'the other site gone: every listed standby and the placeholder must answer',
      'ANY 2 (b,c)',
      `ssn=ANY 3 (${PH},b,c)`,
    ],
    ['already holding: nothing changes', `ANY 3 (${PH},b,c)`, null],
    ['no standby listed: the placeholder alone', '', `ssn=ANY 1 (${PH})`],
  ])('quorum, strict: %s', (_what, ssn, expected) => {
    const steps = planQuorum({
      leader: 'a',
      me: 'a',
      quorum: 0,
      voters: ['b', 'c'],
      currentValue: ssn,
      standbyNames: parseStandbyNames(ssn),
      active: ['b'],
      confirmed: ['b'],
      strict: true,
      syncWanted: 1,
      sitesMissing: 1,
    });
    expect(shape(steps)).toEqual([...(expected ? [expected] : []), 'strictHold']);
  });

  it('quorum: the site comes back to a held setting: ANY 2 of the two standbys, never fewer than the rule needs', () => {
    const ssn = `ANY 3 (${PH},b,c)`;
    const steps = planQuorum({
      leader: 'a',
      me: 'a',
      quorum: 0,
      voters: ['b', 'c'],
      currentValue: ssn,
      standbyNames: parseStandbyNames(ssn),
      active: ['b', 'c'],
      confirmed: ['b', 'c'],
      strict: true,
      syncWanted: 2,
      sitesMissing: 0,
    });
    const settings = steps.filter((s) => s.type === 'setStandbyNames').map((s) => (s as { value: string }).value);
    expect(settings.length).toBeGreaterThan(0);
    for (const value of settings) expect(parseStandbyNames(value).count).toBeGreaterThanOrEqual(2);
    expect(settings[settings.length - 1]).toBe('ANY 2 (b,c)');
  });
});

describe('synchronous_site_count before a promotion (holdForSites)', () => {
  const SITES: Record<string, string> = { a: 'dc1', b: 'dc1', c: 'dc2' };
  const siteOf = (name: string) => SITES[name];
  it.each([
    // what, names, count, quorum, strict, new leader's site -> names and count it starts with
    ['priority, strict: the kept standby stands elsewhere', ['c'], 1, false, true, 'dc1', ['c'], 1],
    [
      'priority, strict: the kept standby stands beside it: the placeholder joins',
      ['a'],
      1,
      false,
      true,
      'dc1',
      ['a', PH],
      2,
    ],
    [
      'quorum: ANY 1 of a and c raised to 2, so c confirms every commit',
      ['a', 'c'],
      1,
      true,
      false,
      'dc1',
      ['a', 'c'],
      2,
    ],
    [
      'quorum, strict, new leader in dc2: a and b both stand elsewhere, ANY 1 is enough',
      ['a', 'b'],
      1,
      true,
      true,
      'dc2',
      ['a', 'b'],
      1,
    ],
    [
      'quorum, strict, new leader in dc1 with a, b listed: no other site',
      ['a', 'b'],
      1,
      true,
      true,
      'dc1',
      ['a', 'b', PH],
      3,
    ],
    [
      'quorum, not strict, no other site: unchanged (the first cycle reports it)',
      ['a', 'b'],
      1,
      true,
      false,
      'dc1',
      ['a', 'b'],
      1,
    ],
  ] as [string, string[], number, boolean, boolean, string, string[], number][])(
    '%s',
    (_what, names, count, quorum, strict, leaderSite, heldNames, heldCount) => {
      expect(holdForSites(names, count, quorum, strict, siteOf, leaderSite, 1, PH)).toEqual({
        names: heldNames,
        count: heldCount,
      });
    },
  );

  it('changes nothing without the rule', () => {
    expect(holdForSites(['a'], 1, false, true, siteOf, 'dc1', 0, PH)).toEqual({ names: ['a'], count: 1 });
  });
});

describe('synchronous_site_count in /config', () => {
  it('defaults to 0 and takes an integer from 0 to 15', () => {
    expect(DYNAMIC_CONFIG_DEFAULTS.synchronous_site_count).toBe(0);
    expect(effectiveDynamicConfig({ synchronous_site_count: 2 }, {}).config.synchronous_site_count).toBe(2);
  });

  it.each([[-1], [16], ['two'], [1.5], [true]])('refuses %p naming the key and the rule', (value) => {
    expect(reviewConfigWrite({ synchronous_site_count: value }).problems).toEqual([]);
    expect(validateDynamicConfigKeys({ synchronous_site_count: value })).toEqual([
      expect.stringMatching(/^synchronous_site_count: must be an integer from 0 to 15, got /),
    ]);
  });
});
