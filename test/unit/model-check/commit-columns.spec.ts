import { boundsFor } from '../../../src/model-check/bounds';
import { loadDecisionCode } from '../../../src/model-check/mutant-loader';
import { decisionMutants } from '../../../src/model-check/mutants';
import { Bounds, DecisionMutation } from '../../../src/model-check/model-types';
import { ReplicationMode } from '../../../src/model-check/model';
import { SCENARIOS } from '../../../src/model-check/mutation-scenarios';
import { parseSchedule, runSchedule } from '../../../src/model-check/schedule';
import { breadthFirst } from '../../../src/model-check/search';
import { checkProgress } from '../../../src/model-check/invariants';

/**
 * synchronous_commit's columns (commit-columns.ts): a standby's write, flush and replay positions apart. The real
 * code passes each scenario in every mode it runs in; the mutant each was written for is caught there.
 */
function judge(name: string, mode: ReplicationMode, mutation?: DecisionMutation) {
  const s = SCENARIOS.find((x) => x.name === name)!;
  const bounds: Bounds = {
    ...boundsFor(mode, s.faults ?? 1, s.operations ?? 0, s.writes ?? 1, 0, true),
    kinds: new Set(s.kinds),
    settings: s.settings,
  };
  const taken = runSchedule(parseSchedule(s.schedule!), mode, bounds, mutation);
  if (taken.kind === 'off course') throw new Error(`off course at ${taken.at}`);
  if (taken.kind === 'violation') return { ...taken.violation, path: taken.path.map((a) => a.label) };
  const settled = checkProgress(taken.c, bounds, mutation);
  if (settled) return { ...settled, path: taken.path.map((a) => a.label) };
  const search = breadthFirst({
    mode,
    bounds,
    start: taken,
    maxDepth: 30,
    maxStates: s.states ?? 1_000,
    progressEvery: 1,
    mutation,
  });
  if (!mutation) expect(search.exhausted).toBe(true);
  return search.violation && { ...search.violation, path: search.violation.path.map((a) => a.label) };
}

function mutant(id: string): DecisionMutation {
  const m = decisionMutants().find((x) => x.id === id);
  if (!m) throw new Error(`no mutant ${id}`);
  return { name: m.id, code: loadDecisionCode(new Map([[m.file, m.source]])) };
}

const ON = 'synchronous_commit on, a standby written ahead of its flush';
const APPLY = 'synchronous_commit remote_apply, a standby flushed ahead of its replay';

describe("synchronous_commit's columns: a standby counted synchronous holds what commits wait for", () => {
  it.each([
    [ON, { writeAhead: 1, replayBehind: 0 }],
    [APPLY, { writeAhead: 0, replayBehind: 1 }],
  ] as const)('the scene of %s: n2 in /sync holds the acknowledged commit, n3 has it in part', (name, n3) => {
    const s = SCENARIOS.find((x) => x.name === name)!;
    const bounds: Bounds = { ...boundsFor('on', 1, 0, 1, 0, true), settings: s.settings };
    const taken = runSchedule(parseSchedule(s.schedule!), 'on', bounds);
    expect(taken.kind).toBe('reached');
    if (taken.kind !== 'reached') return;
    expect(taken.c.sync).toEqual({ leader: 0, standbys: [1], quorum: 0 });
    expect(taken.c.acked).toEqual({ timeline: 1, wal: 1, sync: true });
    expect(taken.c.nodes[2]).toMatchObject({ wal: n3.replayBehind, ...n3 });
  });

  it.each([
    [ON, 'on'],
    [ON, 'strict'],
    [APPLY, 'on'],
    [APPLY, 'strict'],
  ] as const)('the real code: %s (%s mode)', (name, mode) => expect(judge(name, mode)).toBeNull());

  it('under `on`, counting write_lsn puts n3 in /sync before it flushed the acknowledged commit (invariant 3)', () => {
    const v = judge(
      ON,
      'on',
      mutant("ha/sync/sync-candidates.ts committedPosition: invert if (synchronousCommit === 'remote_write')"),
    );
    expect(v?.invariant).toBe('sync');
    expect(v!.message).toMatch(/^n3 may be promoted \(\/sync names it\) but lacks the acknowledged commit/);
  });

  it('under remote_apply, counting flush_lsn puts n3 in /sync before it replayed the acknowledged commit (3c)', () => {
    const v = judge(
      APPLY,
      'on',
      mutant("ha/sync/sync-candidates.ts committedPosition: invert if (synchronousCommit === 'remote_apply')"),
    );
    expect(v?.invariant).toBe('sync');
    expect(v!.message).toMatch(/^\/sync names n3 synchronous but its replay position 1\/0 lacks the commit at 1\/1/);
  });
});
