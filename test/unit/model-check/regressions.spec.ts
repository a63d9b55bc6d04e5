import { enabledActions } from '../../../src/model-check/actions';
import { Action, ActionKind, Bounds } from '../../../src/model-check/model-types';
import { boundsFor } from '../../../src/model-check/cli';
import { ClusterModel, NODE_NAMES } from '../../../src/model-check/model';
import { steadyStart } from '../../../src/model-check/search';
import { checkedStep } from '../../../src/model-check/step';

/** Counter-examples the checker found, replayed step by step: each was a bug, now fixed. */
function steps(text: string): Action[] {
  return text.split(',').map((label) => {
    const [kind, node] = label.trim().split(' ');
    return {
      kind: kind as ActionKind,
      node: node ? NODE_NAMES.indexOf(node as (typeof NODE_NAMES)[number]) : -1,
      label: label.trim(),
    };
  });
}

/** Takes every step (each must be possible where it is taken); the violations met, and the state reached. */
function replay(start: ClusterModel, path: Action[], bounds: Bounds): { violations: string[]; end: ClusterModel } {
  let c = start;
  const violations: string[] = [];
  for (const action of path) {
    expect(enabledActions(c, bounds).map((a) => a.label)).toContain(action.label);
    const step = checkedStep(c, action, bounds);
    if (step.violation) violations.push(step.violation.message);
    c = step.next;
  }
  return { violations, end: c };
}

describe('counter-examples found by the model checker stay fixed', () => {
  const bounds = boundsFor('off', 8, 4, 12, 6);
  const start = steadyStart('off', bounds);

  it("a lock holder's restarted primary whose start completes after its agent froze past the lease is fenced at once", () => {
    const path = steps(
      'agentCrash n3, agentCrash n2, pgCrash n1, cycle n1, agentFreeze n1, agentRestart n2, dcsCut n1, cycle n2, tick, agentRestart n3, ' +
        'cycle n2, cycle n3, tick, cycle n2, cycle n3, tick, agentRestart n1, complete n1',
    );
    const { violations, end } = replay(start, path, bounds);
    expect(violations).toEqual([]);
    expect(end.nodes[0]).toMatchObject({ pg: 'crashed', lease: 0 });
  });

  it('a lock holder tagged nofailover after it won the race, its promotion cut short by an agent crash, does not promote', () => {
    const path = steps(
      'agentFreeze n3, agentCrash n2, agentFreeze n1, tick, tick, agentRestart n2, cycle n2, noFailover n2, dcsCut n2, agentCrash n2, dcsHeal n2, agentRestart n2, cycle n2',
    );
    const { violations, end } = replay(start, path, bounds);
    expect(violations).toEqual([]);
    expect(end.nodes[1]).toMatchObject({ op: 'none', primary: false, leader: false });
    expect(end.leaderKey).toBe(-1);
  });

  it('a primary whose fence was killed, thawed after its lease ran out, deciding on a read taken before another node won the key, demotes', () => {
    const strict = boundsFor('strict', 8, 4, 12, 6);
    const path = steps(
      'agentFreeze n1, agentCrash n3, pgCrash n2, agentFreeze n2, dcsCut n2, fenceKill n1, dcsHeal n2, write n1, tick, agentRestart n3, agentRestart n2, ' +
        'cycle n2, cycle n3, complete n2, tick, agentRestart n1, read n1, cycle n2, cycle n1',
    );
    const { violations, end } = replay(steadyStart('strict', strict), path, strict);
    expect(violations).toEqual([]);
    expect(end.nodes[0]).toMatchObject({ op: 'demote', role: 'demoted', fenceDead: true });
    expect(end.leaderKey).toBe(1);
  });

  it('a promotion completing after the lock was lost (cut from the DCS mid-promotion) is stopped by the fence', () => {
    // n2 wins the race and promotes; cut from etcd, its refresh fails and the fence was disarmed (no primary yet); the
    // promotion completed after the lease ran out, a primary without lease nor fence until the agent's next cycle.
    const path = steps(
      'agentFreeze n1, cycle n2, cycle n3, tick, cycle n2, cycle n3, tick, cycle n2, dcsCut n2, cycle n3, tick, cycle n2, ' +
        'cycle n3, tick, cycle n2, complete n2, cycle n3, tick',
    );
    const { violations, end } = replay(start, path, bounds);
    expect(violations).toEqual([]);
    expect(end.nodes[1]).toMatchObject({ pg: 'crashed', primary: false, lease: 0 });
  });

  it('a member restarted while a failsafe leader holds (its acceptance forgotten) does not race beside it', () => {
    // n1, cut from etcd, holds by failsafe; n3's agent restarts and forgets it accepted n1; n1's key and member key run
    // out in etcd. The race probed only the members with a key, so n3 did not see n1 and promoted beside it; it now
    // probes /failsafe's members too, as the reference's race: n1 answers as a primary and n3 does not race.
    const failsafe = { ...boundsFor('off', 2, 0, 0, 0, true), failsafe: true };
    const path = steps(
      'dcsCut n1, cycle n1, cycle n2, cycle n3, tick, cycle n1, cycle n2, agentCrash n3, tick, agentRestart n3, cycle n3',
    );
    const { violations, end } = replay(steadyStart('off', failsafe), path, failsafe);
    expect(violations).toEqual([]);
    expect(end.leaderKey).toBe(-1);
    expect(end.nodes.map((n) => [n.primary, n.op])).toEqual([
      [true, 'none'],
      [false, 'none'],
      [false, 'none'],
    ]);
  });
});
