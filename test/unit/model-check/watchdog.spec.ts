import { ActionKind, Bounds, DecisionMutation } from '../../../src/model-check/model-types';
import { BROKEN_VARIANTS } from '../../../src/model-check/mutations';
import { breadthFirst } from '../../../src/model-check/search';
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

describe('invariant 10: a node whose watchdog cannot be activated neither leads nor is promoted (watchdog mode required)', () => {
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
});
