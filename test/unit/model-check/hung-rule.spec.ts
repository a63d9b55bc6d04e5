import { ActionKind, Bounds, DecisionMutation } from '../../../src/model-check/model-types';
import { ReplicationMode } from '../../../src/model-check/model';
import { BROKEN_VARIANTS } from '../../../src/model-check/mutations';
import { breadthFirst } from '../../../src/model-check/search';

const bounds = (kinds: ActionKind[], faults: number, fenceless: boolean): Bounds => ({
  faults,
  operations: 0,
  writes: 0,
  staleReads: 0,
  modes: ['off', 'on', 'quorum'],
  kinds: new Set(kinds),
  fenceless,
});
const search = (mode: ReplicationMode, b: Bounds, mutation?: DecisionMutation) =>
  breadthFirst({ mode, bounds: b, maxDepth: 40, maxStates: 20_000, progressEvery: 1, mutation });

/** The lock holder's primary hangs (pgHang, the one fault). */
const HANG: ActionKind[] = ['cycle', 'tick', 'complete', 'pgHang'];
/** ...and its agent dies or comes back around it: the key runs out while the server hangs. */
const HANG_AND_AGENT: ActionKind[] = [...HANG, 'agentCrash', 'agentRestart'];

describe('invariant 16: a hung server is ended (postgres_unresponsive_timeout)', () => {
  it.each([
    ['off', false],
    ['off', true],
    ['on', false],
    ['on', true],
    ['quorum', false],
    ['quorum', true],
  ] as const)(
    'the real decision code exhausts the hang with no violation (%s, without fences: %s)',
    (mode, fenceless) => {
      const report = search(mode, bounds(HANG, 1, fenceless));
      expect(report.violation).toBeNull();
      expect(report.exhausted).toBe(true);
    },
  );

  it('without fences, a hung primary whose agent comes back after the key ran out is killed: the cluster gets a leader', () => {
    // Before the fix its agent left it alone: the others saw a primary answer and raced no more, nobody led.
    const report = search('quorum', bounds(HANG_AND_AGENT, 2, true));
    expect(report.violation).toBeNull();
    expect(report.exhausted).toBe(true);
  });

  it('the broken variant (the hung server is not killed) is caught: the key goes, the server stays and answers as a primary', () => {
    const report = search('off', bounds(HANG, 1, false), BROKEN_VARIANTS.unresponsive);
    expect(report.violation?.invariant).toBe('unresponsive');
    expect(report.violation!.message).toBe(
      "the cluster settled with n1's PostgreSQL answering nothing while its agent runs (nobody holds the leader key)",
    );
    expect(report.violation!.path.map((a) => a.label)).toEqual(['pgHang n1']);
  });
});
