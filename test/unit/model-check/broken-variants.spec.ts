import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runAudit } from '../../../src/audit/audit-cli';
import { ActionKind, Bounds, DecisionMutation, InvariantId } from '../../../src/model-check/model-types';
import { ReplicationMode } from '../../../src/model-check/model';
import { BROKEN_VARIANTS, IGNORING_PAUSE } from '../../../src/model-check/mutations';
import { breadthFirst, FoundViolation } from '../../../src/model-check/search';
import { counterExampleEvents, writeCounterExample } from '../../../src/model-check/trace';

/** The steps a case may take: small sets keep the breadth-first search of each case short. */
function bounds(kinds: ActionKind[], faults: number, operations = 0, writes = 0): Bounds {
  return { faults, operations, writes, staleReads: 0, kinds: new Set(kinds), modes: ['off', 'on'] };
}

function search(mode: ReplicationMode, b: Bounds, mutation?: DecisionMutation, progressEvery = 0) {
  return breadthFirst({ mode, bounds: b, maxDepth: 15, maxStates: 400_000, progressEvery, mutation });
}

const cases: {
  invariant: InvariantId;
  variant: DecisionMutation;
  mode: ReplicationMode;
  bounds: Bounds;
  progressEvery?: number;
}[] = [
  {
    invariant: 'lease',
    variant: BROKEN_VARIANTS.lease,
    mode: 'off',
    bounds: bounds(['cycle', 'tick', 'complete', 'agentFreeze', 'dcsCut'], 1),
  },
  {
    invariant: 'promotion',
    variant: BROKEN_VARIANTS.promotion,
    mode: 'off',
    bounds: bounds(['cycle', 'tick', 'complete', 'write', 'agentFreeze'], 1, 0, 2),
  },
  {
    invariant: 'promotion',
    variant: IGNORING_PAUSE,
    mode: 'off',
    bounds: bounds(['cycle', 'tick', 'complete', 'agentFreeze', 'pause'], 1, 1),
  },
  // One write of lag is within maximum_lag_on_failover: invariant 2 lets the less advanced winner through, the race's does not.
  {
    invariant: 'race',
    variant: BROKEN_VARIANTS.race,
    mode: 'off',
    bounds: bounds(['cycle', 'tick', 'complete', 'write', 'ship', 'agentFreeze'], 1, 0, 1),
  },
  {
    invariant: 'sync',
    variant: BROKEN_VARIANTS.sync,
    mode: 'on',
    bounds: bounds(['cycle', 'tick', 'complete', 'write', 'ship', 'agentFreeze'], 2, 0, 1),
  },
  {
    invariant: 'sync',
    variant: BROKEN_VARIANTS.sync,
    mode: 'quorum',
    bounds: bounds(['cycle', 'tick', 'complete', 'write', 'ship', 'agentFreeze'], 2, 0, 1),
  },
  {
    invariant: 'progress',
    variant: BROKEN_VARIANTS.progress,
    mode: 'off',
    bounds: bounds(['cycle', 'tick', 'complete'], 0),
    progressEvery: 1,
  },
  // A leader's agent crashes: the others must take over once its key expired.
  {
    invariant: 'availability',
    variant: BROKEN_VARIANTS.availability,
    mode: 'off',
    bounds: bounds(['cycle', 'tick', 'complete', 'agentCrash'], 1),
    progressEvery: 1,
  },
  {
    invariant: 'sync-settled',
    variant: BROKEN_VARIANTS['sync-settled'],
    mode: 'on',
    bounds: bounds(['cycle', 'tick', 'complete'], 0),
    progressEvery: 1,
  },
  {
    invariant: 'replay',
    variant: BROKEN_VARIANTS.replay,
    mode: 'off',
    bounds: bounds(['cycle', 'tick', 'complete', 'switchover'], 0, 1),
  },
];

describe('the model checker catches a broken decision code', () => {
  it.each(cases)(
    'invariant $invariant ($mode): "$variant.name" is caught with a counter-example of at most 15 steps',
    ({ invariant, variant, mode, bounds: b, progressEvery }) => {
      const report = search(mode, b, variant, progressEvery);
      expect(report.violation?.invariant).toBe(invariant);
      expect(report.violation!.path.length).toBeLessThanOrEqual(15);
    },
  );

  it.each(cases)(
    'the real decision code passes the same search (invariant $invariant, $mode)',
    ({ mode, bounds: b, progressEvery }) => {
      const report = search(mode, b, undefined, progressEvery);
      expect(report.violation).toBeNull();
      expect(report.states).toBeGreaterThan(1);
    },
  );
});

describe('a counter-example is a log that stator audit replays', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'stator-model-check-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes the events in the store format, and replay --file --at shows the cluster after each step', async () => {
    const caseOf = cases.find((c) => c.invariant === 'lease')!;
    const violation = search(caseOf.mode, caseOf.bounds, caseOf.variant).violation as FoundViolation;
    const events = counterExampleEvents(caseOf.mode, caseOf.bounds, violation, caseOf.variant);
    const file = join(dir, 'counter-example.jsonl');
    writeCounterExample(file, events);

    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    for (const line of lines)
      expect(Object.keys(line)).toEqual(
        expect.arrayContaining(['stream', 'seq', 'type', 'at', 'node', 'from', 'to', 'cause', 'data']),
      );
    expect(lines.filter((e) => e.type === 'model.step')).toHaveLength(violation.path.length);
    expect(lines[lines.length - 1]).toMatchObject({ type: 'model.violation', data: { invariant: 'lease' } });

    const out: string[] = [];
    const err: string[] = [];
    const io = { stdout: (t: string) => out.push(t), stderr: (t: string) => err.push(t), env: {} };
    const firstStep = lines.find((e) => e.type === 'model.step').at;
    expect(await runAudit(['replay', '--file', file, '--at', firstStep], io)).toBe(0);
    expect(out.join('')).toContain('leader:   n1');
    expect(out.join('')).toMatch(/n1 +state running, role primary, leadership leader/);
    out.length = 0;
    expect(await runAudit(['replay', '--file', file, '--at', lines[lines.length - 1].at, '--json'], io)).toBe(0);
    expect(JSON.parse(out.join('')).members.n2).toBeDefined();
    expect(err).toEqual([]);
  });
});
