import { ActionKind, Bounds, DecisionMutation } from '../../../src/model-check/model-types';
import { BROKEN_VARIANTS } from '../../../src/model-check/mutations';
import { breadthFirst, steadyStart } from '../../../src/model-check/search';
import { checkedStep } from '../../../src/model-check/step';
import { IGNORING_THE_WATCHDOG } from '../../../src/model-check/watchdog-variant';

/** Watchdog mode `required` on every node: a node's watchdog may fail to activate (watchdogFail). */
const bounds = (kinds: ActionKind[], fenceless: boolean): Bounds => ({
  faults: 2,
  operations: 0,
  writes: 1,
  staleReads: 0,
  modes: ['off', 'on'],
  kinds: new Set(kinds),
  watchdog: true,
  fenceless,
});
const KINDS: ActionKind[] = [
  'cycle',
  'tick',
  'complete',
  'write',
  'ship',
  'watchdogFail',
  'agentCrash',
  'agentRestart',
];
const search = (b: Bounds, maxStates: number, mutation?: DecisionMutation, progressEvery = 8) =>
  breadthFirst({ mode: 'off', bounds: b, maxDepth: 40, maxStates, progressEvery, mutation });

describe('invariant 13: a node whose watchdog cannot be activated neither leads nor is promoted (watchdog mode required)', () => {
  it('the broken variant (decide() never hears of the watchdog) is caught: the leader keeps its key and its primary', () => {
    expect(BROKEN_VARIANTS.watchdog).toBe(IGNORING_THE_WATCHDOG);
    const report = search(bounds(['cycle', 'tick', 'complete', 'watchdogFail'], true), 5_000, IGNORING_THE_WATCHDOG);
    expect(report.violation?.invariant).toBe('watchdog');
    expect(report.violation!.message).toBe(
      'the cluster settled with n1 holding the leader key although its watchdog (mode required) cannot be activated',
    );
    // Found on the first settled state judged after the fault.
    expect(report.violation!.path[0].label).toBe('watchdogFail n1');
    expect(report.violation!.path.length).toBeLessThanOrEqual(2);
  });

  it('the broken variant is caught when a replica whose watchdog failed wins the race (the promotion judged)', () => {
    // n1's agent dies (no fence: its primary runs on, exempt), n2's watchdog fails: the race must not elect n2.
    const report = search(
      bounds(['cycle', 'tick', 'complete', 'watchdogFail', 'agentCrash'], true),
      5_000,
      IGNORING_THE_WATCHDOG,
      0,
    );
    expect(report.violation?.invariant).toBe('watchdog');
    expect(report.violation!.message).toBe('n2 promoted although its watchdog (mode required) cannot be activated');
    expect(report.violation!.path.map((a) => a.label)).toEqual([
      'agentCrash n1',
      'cycle n2',
      'watchdogFail n2',
      'cycle n3',
      'tick',
      'cycle n2',
      'cycle n3',
      'tick',
      'cycle n2',
    ]);
  });

  it('the real code keeps it, without a fence (decide() alone) and with one', () => {
    for (const fenceless of [true, false]) {
      const report = search(bounds(KINDS, fenceless), 5_000);
      expect(report.violation).toBeNull();
      expect(report.coverage.watchdogFail).toBeGreaterThan(0);
    }
  });

  it('the race passes over a member whose watchdog failed, WAL and all, as the reference does (invariant 2 too)', () => {
    // n1 acknowledged two writes no replica holds, then its watchdog failed: it demotes and releases the key; n2 wins at
    // WAL 0. The reference's race skips such a member (failover_limitation), as it skips a nofailover one.
    const b = { ...bounds(KINDS, true), writes: 2 };
    let c = steadyStart('off', b);
    const violations: string[] = [];
    for (const label of [
      'write n1',
      'write n1',
      'watchdogFail n1',
      'cycle n1',
      'complete n1',
      'cycle n1',
      'cycle n2',
    ]) {
      const [kind, node] = label.split(' ');
      const step = checkedStep(c, { kind: kind as ActionKind, node: Number(node.slice(1)) - 1, label }, b);
      if (step.violation) violations.push(step.violation.message);
      c = step.next;
    }
    expect(violations).toEqual([]);
    expect(c.leaderKey).toBe(1);
    expect(c.nodes[1]).toMatchObject({ op: 'promote', wal: 0 });
    expect(c.nodes[0]).toMatchObject({ wal: 2, primary: false, watchdogFailed: true });
  });
});
