import { enabledActions } from '../../../src/model-check/actions';
import { Action, ActionKind, Bounds, DecisionMutation } from '../../../src/model-check/model-types';
import { boundsFor } from '../../../src/model-check/bounds';
import { ClusterModel, NODE_NAMES } from '../../../src/model-check/model';
import { BROKEN_VARIANTS } from '../../../src/model-check/mutations';
import { GUESSING_CONFIRMED } from '../../../src/model-check/quorum-gap-variant';
import { breadthFirst, steadyStart } from '../../../src/model-check/search';
import { checkedStep } from '../../../src/model-check/step';

const steps = (text: string): Action[] =>
  text.split(',').map((label) => {
    const [kind, node] = label.trim().split(' ');
    return {
      kind: kind as ActionKind,
      node: node ? NODE_NAMES.indexOf(node as (typeof NODE_NAMES)[number]) : -1,
      label: label.trim(),
    };
  });

/**
 * Takes every step (each must be possible); `loop_wait` is a round without shipping WAL: each running
 * agent cycles, its pending action completes, then time passes. The first violation met and the state reached.
 */
function replay(
  path: Action[],
  bounds: Bounds,
  mutation?: DecisionMutation,
): { violation: string | null; at: number; end: ClusterModel } {
  let c = steadyStart('quorum', bounds, mutation);
  for (const [at, planned] of path.entries()) {
    const round: Action[] = [];
    if (planned.label === 'loop_wait') {
      c.nodes.forEach(
        (n, i) =>
          n.agent === 'up' && !n.cycled && round.push({ kind: 'cycle', node: i, label: `cycle ${NODE_NAMES[i]}` }),
      );
    }
    for (const action of [...round, ...(planned.label === 'loop_wait' ? [] : [planned])]) {
      const step = checkedStep(c, action, bounds, mutation);
      if (step.violation)
        return { violation: `${step.violation.invariant}: ${step.violation.message}`, at, end: step.next };
      c = step.next;
    }
    if (planned.label !== 'loop_wait') continue;
    const completes = c.nodes.flatMap((n, i) =>
      n.agent === 'up' && n.op !== 'none'
        ? [{ kind: 'complete' as ActionKind, node: i, label: `complete ${NODE_NAMES[i]}` }]
        : [],
    );
    for (const action of [...completes, { kind: 'tick' as ActionKind, node: -1, label: 'tick' }]) {
      expect(enabledActions(c, bounds).map((a) => a.label)).toContain(action.label);
      const step = checkedStep(c, action, bounds, mutation);
      if (step.violation)
        return { violation: `${step.violation.invariant}: ${step.violation.message}`, at, end: step.next };
      c = step.next;
    }
  }
  return { violation: null, at: path.length, end: c };
}
// The schedule of the bug fixed by `streamingPositions` (docs/chaos-and-safety.md): n1 writes, n3 receives it,
// n3's agent freezes (its member key expires, its PostgreSQL streams on), three loop_waits, n1 dies, three more.
const GAP_SCHEDULE = steps(
  'write n1, ship n3, agentFreeze n3, loop_wait, loop_wait, loop_wait, agentCrash n1, pgCrash n1, loop_wait, loop_wait, loop_wait',
);

describe('invariant 9: no quorum of /sync members lacking an acknowledged commit may elect one of them (quorum mode)', () => {
  const bounds = boundsFor('quorum', 3, 0, 2);

  it("the real code keeps the gap closed on the schedule of the bug: n2, without n3's commit, is not counted as confirmed and cannot win", () => {
    const { violation, end } = replay(GAP_SCHEDULE, bounds);
    expect(violation).toBeNull();
    expect(end.acked).toEqual({ timeline: 1, wal: 1, sync: true });
    // n2, behind, stays in /sync only with a quorum that needs n1's vote: nobody promoted, nothing lost.
    expect(end.sync).toEqual({ leader: 0, standbys: [1], quorum: 1 });
    expect(end.nodes[0].pg).toBe('crashed');
    expect(end.nodes.filter((n) => n.primary || n.op === 'promote')).toEqual([]);
  });

  it('the broken variant (the reference guess of the confirmed standbys from the quorum) is flagged before any failure: /sync n1 + {n2}, quorum 0', () => {
    expect(BROKEN_VARIANTS['quorum-gap']).toBe(GUESSING_CONFIRMED);
    const { violation, at } = replay(GAP_SCHEDULE, bounds, GUESSING_CONFIRMED);
    expect(violation).toBe(
      'quorum-gap: n2 lacks the acknowledged commit at 1/1 yet could win the race (/sync n1 + {n2}, quorum 0)',
    );
    // In the third loop_wait after n3's freeze (its member key expired), before n1's crash.
    expect(at).toBe(5);
  });

  const kinds: ActionKind[] = ['cycle', 'tick', 'complete', 'write', 'ship', 'agentFreeze', 'agentCrash', 'pgCrash'];
  const search = (mutation?: DecisionMutation) =>
    breadthFirst({
      mode: 'quorum',
      bounds: { ...boundsFor('quorum', 2, 0, 1), kinds: new Set(kinds) },
      maxDepth: 16,
      maxStates: 15_000,
      progressEvery: 0,
      mutation,
    });

  it("a bounded search over writes, shipping, freezes and crashes finds the broken variant's gap", () => {
    const report = search(GUESSING_CONFIRMED);
    expect(report.violation?.invariant).toBe('quorum-gap');
    // n2 acknowledged the write alone, then its PostgreSQL crashed: the leader's next cycle hands /sync to n3 (quorum 0).
    expect(report.violation!.path.map((a) => a.label)).toEqual(['write n1', 'ship n2', 'pgCrash n2', 'cycle n1']);
    expect(report.violation!.message).toMatch(/^n3 lacks the acknowledged commit at 1\/1 .*quorum 0\)$/);
  });

  it('the same search finds nothing on the real code', () => {
    const report = search();
    expect(report.violation).toBeNull();
    expect(report.states).toBeGreaterThan(12_000);
  });
});
