import { applyAction } from '../../../src/model-check/actions';
import {
  HOLDING_WITHOUT_EVERY_MEMBER,
  RACING_PAST_THE_FAILSAFE_LEADER,
} from '../../../src/model-check/failsafe-variant';
import { checkState } from '../../../src/model-check/invariants';
import { ClusterModel } from '../../../src/model-check/model';
import { ActionKind, Bounds, DecisionMutation } from '../../../src/model-check/model-types';
import { breadthFirst, steadyStart } from '../../../src/model-check/search';

/** failsafe_mode on: the DCS lost by the leader (dcsCut) or by everybody (quorumLoss), members refusing by being cut off. */
const failsafeBounds = (kinds: ActionKind[], fenceless: boolean, faults = 2): Bounds => ({
  faults,
  operations: 0,
  writes: 0,
  staleReads: 0,
  modes: ['off', 'on'],
  kinds: new Set(kinds),
  failsafe: true,
  fenceless,
});
const CUT_OFF: ActionKind[] = ['cycle', 'tick', 'complete', 'dcsCut', 'peerCut'];
const FROZEN: ActionKind[] = ['cycle', 'tick', 'complete', 'dcsCut', 'agentFreeze'];
const search = (b: Bounds, mutation?: DecisionMutation) =>
  breadthFirst({ mode: 'off', bounds: b, maxDepth: 40, maxStates: 100_000, progressEvery: 8, mutation });

/** Takes the steps by label (`cycle n1`, `tick`); returns the verdict of each cycle and the invariant 1 and 3 violations met. */
function run(start: ClusterModel, labels: string[], b: Bounds) {
  let c = start;
  const verdicts: string[] = [];
  const violations: string[] = [];
  for (const label of labels) {
    const [kind, node] = label.split(' ');
    const step = applyAction(c, { kind: kind as ActionKind, node: node ? Number(node.slice(1)) - 1 : -1, label }, b);
    if (step.cycle) verdicts.push(`${label}: ${step.cycle.verdict}`);
    const violation = checkState(step.next);
    if (violation) violations.push(violation.message);
    c = step.next;
  }
  return { c, verdicts, violations };
}

describe('failsafe mode in the model checker (issue 34, part 2)', () => {
  const b = failsafeBounds([...CUT_OFF, 'quorumLoss', 'write'], true);
  const round = ['cycle n1', 'cycle n2', 'cycle n3', 'tick'];

  it('the leader cut from the DCS stays primary while every member accepts its call, and they do not race', () => {
    const start = steadyStart('off', b);
    expect(start.failsafeKey).toBe(0b111);
    const { c, verdicts, violations } = run(
      start,
      ['dcsCut n1', ...round, ...round, ...round, ...round, 'write n1'],
      b,
    );
    expect(violations).toEqual([]);
    expect(verdicts.filter((v) => v.startsWith('cycle n1'))).toEqual(
      Array(4).fill(
        'cycle n1: continue to run as a leader because failsafe mode is enabled and all members are accessible',
      ),
    );
    // etcd's lease ran out three loop_waits after the cut; the members that accepted n1 never raced.
    expect(c.leaderKey).toBe(-1);
    expect(verdicts).toContain('cycle n2: following failsafe leader n1: it reached every member less than ttl ago');
    expect(c.nodes.map((n) => n.primary)).toEqual([true, false, false]);
    expect(c.nodes[0].lease).toBeGreaterThan(0);
    expect(c.nodes[0].wal).toBe(1);
  });

  it('a member that does not answer ends it: the leader demotes (offline)', () => {
    const { c, verdicts } = run(steadyStart('off', b), ['dcsCut n1', ...round, 'peerCut n3', 'cycle n1'], b);
    expect(verdicts.at(-1)).toBe('cycle n1: demoted self because DCS is not accessible and I was a leader');
    expect(c.nodes[0]).toMatchObject({ op: 'demote', leader: false });
  });

  it('the real code keeps every invariant from decide() alone (no fence), the leader or a member cut off', () => {
    const report = search(failsafeBounds(CUT_OFF, true));
    expect(report.violation).toBeNull();
    expect(report.exhausted).toBe(true);
    expect(report.states).toBeGreaterThan(1_000);
  });

  it('the broken variant (the leader holds although a member refused) is caught: two primaries', () => {
    const report = search(failsafeBounds(CUT_OFF, true), HOLDING_WITHOUT_EVERY_MEMBER);
    expect(report.violation?.invariant).toBe('lease');
    expect(report.violation!.message).toBe('n1 and n2 accept writes at once');
    // n1 loses the DCS and its peers, holds anyway; its key runs out in etcd and n2, which n1 never reached, wins.
    expect(report.violation!.path.map((a) => a.label)).toEqual([
      'dcsCut n1',
      'peerCut n1',
      'cycle n1',
      'cycle n2',
      'cycle n3',
      'tick',
      'cycle n1',
      'cycle n2',
      'cycle n3',
      'tick',
      'cycle n2',
      'complete n2',
    ]);
  });

  it('the broken variant (a member races although it accepted a failsafe leader) is caught with the fence in place', () => {
    const report = search(failsafeBounds(FROZEN, false), RACING_PAST_THE_FAILSAFE_LEADER);
    expect(report.violation?.invariant).toBe('lease');
    expect(report.violation!.message).toBe('n1 and n2 accept writes at once');
    // n1 held by failsafe freezes: its fence stops it a ttl less the margin after its last round, but n2 raced before.
    expect(report.violation!.path.map((a) => a.label).slice(0, 3)).toEqual(['dcsCut n1', 'cycle n1', 'agentFreeze n1']);
  });
});
