import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { boundsFor } from '../../../src/model-check/bounds';
import { loadDecisionCode } from '../../../src/model-check/mutant-loader';
import { decisionMutants } from '../../../src/model-check/mutants';
import { Bounds, DecisionMutation } from '../../../src/model-check/model-types';
import { ReplicationMode } from '../../../src/model-check/model';
import { SCENARIOS } from '../../../src/model-check/mutation-scenarios';
import { parseSchedule, runSchedule } from '../../../src/model-check/schedule';
import { breadthFirst, steadyStart } from '../../../src/model-check/search';
import { checkProgress } from '../../../src/model-check/invariants';

/**
 * The mutation run's scenarios that turn a setting on (settings-rules.ts): check_timeline, primary_start_timeout 0,
 * a member tagged nosync; and members in two sites with `/status` current_site in the race. The real code passes
 * each; the mutant each was written for is caught there.
 */
function judge(name: string, mode: ReplicationMode, mutation?: DecisionMutation) {
  const s = SCENARIOS.find((x) => x.name === name)!;
  const bounds: Bounds = {
    ...boundsFor(mode, s.faults ?? 1, s.operations ?? 0, s.writes ?? 1, 0, true),
    kinds: new Set(s.kinds),
    settings: s.settings,
    ...(s.siteRule ? { siteRule: s.siteRule } : {}),
    ...(s.watchdog ? { watchdog: true } : {}),
    ...(s.failsafe ? { failsafe: true } : {}),
  };
  let start;
  if (s.schedule) {
    const taken = runSchedule(parseSchedule(s.schedule), mode, bounds, mutation);
    if (taken.kind === 'off course') throw new Error(`off course at ${taken.at}`);
    if (taken.kind === 'violation') return { ...taken.violation, path: taken.path.map((a) => a.label) };
    const settled = checkProgress(taken.c, bounds, mutation);
    if (settled) return { ...settled, path: taken.path.map((a) => a.label) };
    start = taken;
  }
  const search = breadthFirst({ mode, bounds, start, maxDepth: 16, maxStates: 1_000, progressEvery: 16, mutation });
  return search.violation && { ...search.violation, path: search.violation.path.map((a) => a.label) };
}

function mutant(id: string): DecisionMutation {
  const m = decisionMutants().find((x) => x.id === id);
  if (!m) throw new Error(`no mutant ${id}`);
  return { name: m.id, code: loadDecisionCode(new Map([[m.file, m.source]])) };
}

describe('check_timeline: a member behind the cluster timeline is no candidate (invariant 14b)', () => {
  it('the setting reaches the snapshot: n3 is left on timeline 1 while n2 leads on timeline 2', () => {
    const s = SCENARIOS.find((x) => x.name === 'check_timeline, the new leader lost')!;
    const bounds: Bounds = { ...boundsFor('off', 2, 0, 0, 0, true), settings: s.settings };
    expect(steadyStart('off', bounds).settings).toEqual({ checkTimeline: true });
    const taken = runSchedule(parseSchedule(s.schedule!), 'off', bounds);
    expect(taken.kind).toBe('reached');
    if (taken.kind !== 'reached') return;
    expect(taken.c.nodes.map((n) => n.timeline)).toEqual([1, 2, 1]);
  });

  it.each(['check_timeline, the new leader lost', 'check_timeline, a switchover to the old timeline'])(
    'the real code: %s',
    (name) => expect(judge(name, 'off')).toBeNull(),
  );

  it('the race without the check lets n3 promote from timeline 1 once n2 is lost', () => {
    const v = judge(
      'check_timeline, the new leader lost',
      'off',
      mutant('ha/leader-race.ts healthiest: skip if (config.check_timeline && ownTimeline < timeline)'),
    );
    expect(v?.invariant).toBe('timeline');
    expect(v!.message).toBe(
      'n3 promoted from timeline 1 although the cluster is on timeline 2 and check_timeline is on',
    );
  });

  it("a switchover's candidate check without it hands the cluster to n3 on timeline 1", () => {
    const v = judge(
      'check_timeline, a switchover to the old timeline',
      'off',
      mutant('ha/leader-race.ts goodCandidates: drop !config.check_timeline || (peer.timeline ?? 0) >= ownTimeline'),
    );
    expect(v?.invariant).toBe('timeline');
    expect(v!.path).toContain('switchover n3');
  });
});

describe('primary_start_timeout 0: a lock holder whose primary crashed hands the key on (invariant 6)', () => {
  const name = 'primary_start_timeout 0, the primary crashed';

  it('the real code: n2 takes over', () => expect(judge(name, 'off')).toBeNull());

  it('without the release the cluster settles with the key on a crashed primary', () => {
    const v = judge(name, 'off', mutant("ha/recover.ts recover: remove { type: 'releaseLock', demote: 'crashed' }"));
    expect(v?.invariant).toBe('availability');
  });
});

describe('nosync: a member tagged nosync is never a synchronous standby (invariant 8b)', () => {
  const name = 'a member tagged nosync';

  it.each(['on', 'strict', 'quorum'] as const)('the real code in %s mode', (mode) =>
    expect(judge(name, mode)).toBeNull(),
  );

  it.each([
    'ha/sync/sync-candidates.ts isNoSync: invert if (!tags)',
    'ha/sync/sync-candidates.ts isNoSync: invert if (tags.nosync !== undefined)',
  ])('%s lists n3 once n2 is lost', (id) => {
    const v = judge(name, 'on', mutant(id));
    expect(v?.invariant).toBe('sync');
    expect(v!.message).toMatch(/n3.*nosync/);
  });
});

describe('sites in the race: a member of the current site as far along goes first (invariant 2d)', () => {
  const name = 'a leader lost, members in two sites';

  it('the real code: n2 (dc1, the current site) takes over, n3 (dc2) defers', () =>
    expect(judge(name, 'off')).toBeNull());

  it('the race without its site deferral cannot go on: it reads the rivals of a deferral, which has none', () => {
    const m = mutant("ha/leader-race.ts healthiest: skip if ('defer' in sites)");
    expect(() => judge(name, 'off', m)).toThrow(/not iterable/);
  });

  it('a race that reads no current_site lets n3 win across sites', () => {
    const ignoresSites: DecisionMutation = {
      name: 'no current_site in the race',
      snapshot: (s) =>
        s.cluster?.status
          ? {
              ...s,
              cluster: {
                ...s.cluster,
                status: { ...s.cluster.status, value: { optime: s.cluster.status.value.optime } },
              },
            }
          : s,
    };
    const v = judge(name, 'off', ignoresSites);
    expect(v?.invariant).toBe('priority');
    expect(v!.message).toBe(
      'n3 (site dc2) won the leader race at 1/1 although n2, reachable at the same position, is in the current site dc1',
    );
  });
});

describe('a switchover to a member whose watchdog cannot be activated (invariant 10)', () => {
  const name = 'a switchover to a member whose watchdog failed';

  it('the real code refuses it, and hands a switchover to nobody in particular to n3', () =>
    expect(judge(name, 'off')).toBeNull());

  it('goodCandidates without its watchdog check steps down for n2, which the race bars', () => {
    const v = judge(name, 'off', mutant('ha/leader-race.ts goodCandidates: drop !peer.watchdogFailed'));
    expect(v?.invariant).toBe('request');
    expect(v!.message).toBe('n1 stepped down for a switchover to n2 although no member could take over');
  });
});

describe('quorum mode with synchronous_mode_strict (invariants 7 and 8)', () => {
  it.each(['strict quorum mode back on without a standby', 'members in two sites, strict quorum'])(
    'the real code: %s',
    (name) => expect(judge(name, 'quorum')).toBeNull(),
  );

  it("planQuorum's hold without a standby, its write inverted, keeps the emptied setting: commits go through", () => {
    const m = mutant('ha/sync/quorum-plan.ts planQuorum: invert if (value !== currentValue)');
    const v = judge('strict quorum mode back on without a standby', 'quorum', m);
    expect(v?.invariant).toBe('sync-settled');
    expect(v!.message).toMatch(/^strict mode without a synchronous standby lets commits through/);
  });

  it("planQuorum's hold for a missing site, its write inverted, lets a commit through on dc1 alone", () => {
    const m = mutant('ha/sync/quorum-plan.ts planQuorum: invert if (held !== currentValue)');
    const v = judge('members in two sites, strict quorum', 'quorum', m);
    expect(['site', 'sync-settled']).toContain(v?.invariant);
  });
});

describe('a switchover to a site: the leader steps down only if a member of that site can take over (invariant 10)', () => {
  const name = 'a switchover to a site none of whose members can take over';

  it.each(['off', 'on'] as const)('the real code in %s mode', (mode) => expect(judge(name, mode)).toBeNull());

  it("goodCandidates without its site filter steps down for n2 (dc1) on a switchover to dc2, whose n3 can't take over", () => {
    const v = judge(
      name,
      'off',
      mutant('ha/leader-race.ts goodCandidates: drop site === undefined || peer.site === site'),
    );
    expect(v?.invariant).toBe('request');
    expect(v!.message).toBe('n1 stepped down for a switchover to site dc2 although no member could take over');
  });
});

describe('failsafe mode: a member /failsafe leaves out does not race (invariant 1)', () => {
  const name = 'failsafe, a member /failsafe leaves out cut off from the leader';

  it('the scene: n1 holds as failsafe leader, n3 read a /failsafe without itself and reaches nobody', () => {
    const s = SCENARIOS.find((x) => x.name === name)!;
    const bounds: Bounds = { ...boundsFor('off', 3, 0, 0, 0, true), failsafe: true };
    const taken = runSchedule(parseSchedule(s.schedule!), 'off', bounds);
    expect(taken.kind).toBe('reached');
    if (taken.kind !== 'reached') return;
    expect(taken.c.failsafeKey).toBe(0b011);
    expect(taken.c.nodes[2]).toMatchObject({ knownFailsafe: 0b011, peerCut: true, agent: 'up' });
    expect(taken.c.nodes[0]).toMatchObject({ dcsCut: true, primary: true });
  });

  it.each(['off', 'quorum'] as const)('the real code in %s mode: n3 stays out of the race', (mode) =>
    expect(judge(name, mode)).toBeNull(),
  );

  it('a race that skips the /failsafe check lets n3 promote beside the failsafe leader', () => {
    const v = judge(
      name,
      'off',
      mutant(
        'ha/leader-race.ts healthiest: skip if (Object.keys(failsafe).length > 0 && !Object.hasOwn(failsafe, local.name))',
      ),
    );
    expect(v?.invariant).toBe('lease');
    expect(v!.message).toBe('n1 and n3 accept writes at once');
  });
});

describe('a standby cluster: no member runs as a primary (invariant 15)', () => {
  const name = 'a standby cluster';

  it('the steady start: n1 holds the key as standby leader of the remote, n2 and n3 follow it', () => {
    const s = SCENARIOS.find((x) => x.name === name)!;
    const c = steadyStart('off', { ...boundsFor('off', 1, 0, 0, 0, true), settings: s.settings });
    expect(c.leaderKey).toBe(0);
    expect(c.nodes.map((n) => [n.pg, n.primary, n.upstream])).toEqual([
      ['running', false, -1],
      ['running', false, 0],
      ['running', false, 0],
    ]);
  });

  it('the real code: through a crash and a restart', () => expect(judge(name, 'off')).toBeNull());

  it('the leader that keeps running as a primary when standby_cluster comes is caught at once', () => {
    const v = judge(
      name,
      'off',
      mutant("ha/decide.ts leaderCycle: remove { type: 'demote', mode: 'fast', restart: true, upstream: remote }"),
    );
    expect(v?.invariant).toBe('lease');
    expect(v!.message).toBe('n1 runs as a primary in a standby cluster (standby_cluster names the remote primary)');
  });
});

describe('failsafe mode: a primary tagged nofailover bars the race (invariant 1, with fences)', () => {
  // The model checker's counter-example against the race that skipped nofailover peers before asking whether they
  // are primaries: n1, failsafe leader cut from the DCS, gets tagged nofailover; n3 forgets accepting it and races.
  const schedule =
    'dcsCut n1, cycle n1, noFailover n1, cycle n2, cycle n3, tick, cycle n1, cycle n2, agentCrash n3, tick, agentRestart n3, cycle n3, complete n3';
  const bounds: Bounds = { ...boundsFor('off', 2, 1, 0, 0), failsafe: true };

  it('the real code: n3 finds n1 primary and stays out of the race', () => {
    const beforeTheLastStep = runSchedule(parseSchedule(schedule.replace(', complete n3', '')), 'off', bounds);
    expect(beforeTheLastStep.kind).toBe('reached');
    if (beforeTheLastStep.kind === 'reached') expect(beforeTheLastStep.c.nodes[2].primary).toBe(false);
    // n3 started no promotion: the counter-example's last step cannot be taken.
    expect(runSchedule(parseSchedule(schedule), 'off', bounds)).toMatchObject({
      kind: 'off course',
      at: 'complete n3',
    });
  });

  it('a race that tests the tag first promotes n3 beside the failsafe leader', () => {
    const code = readFileSync(join(__dirname, '../../../src/ha/leader-race.ts'), 'utf8');
    const primaryCheck =
      '    if (peer.isPrimary) return { ok: false, reason: `Primary (${peer.name}) is still alive` };\n';
    const tagCheck = '    if (isNoFailover(peer.tags) || peer.watchdogFailed) continue;\n';
    expect(code).toContain(primaryCheck + tagCheck);
    const tagFirst = code.replace(primaryCheck + tagCheck, tagCheck + primaryCheck);
    const before = { name: 'the tag tested first', code: loadDecisionCode(new Map([['ha/leader-race.ts', tagFirst]])) };
    const outcome = runSchedule(parseSchedule(schedule), 'off', bounds, before);
    expect(outcome.kind).toBe('violation');
    if (outcome.kind === 'violation') expect(outcome.violation.message).toBe('n1 and n3 accept writes at once');
  });
});
