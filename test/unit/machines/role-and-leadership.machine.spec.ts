import { createActor } from 'xstate';
import { ManualClock } from '../../../src/common/clock';
import { RecordedEvent } from '../../../src/events/event';
import { transitionRecorder } from '../../../src/events/transition-recorder';
import { leadershipMachine } from '../../../src/ha/leadership.machine';
import { RoleEvent, roleMachine, RoleName } from '../../../src/ha/role.machine';

function recordedActor<T extends typeof roleMachine | typeof leadershipMachine>(machine: T, name: string) {
  const recorded: RecordedEvent[] = [];
  const sink = { record: (event: Omit<RecordedEvent, 'seq'>) => recorded.push({ ...event, seq: recorded.length + 1 }) };
  const actor = createActor(machine as typeof roleMachine, {
    inspect: transitionRecorder(name, 'n1', sink, new ManualClock()),
  });
  actor.start();
  return { actor, recorded };
}

describe('role machine (reference 3.13)', () => {
  const paths: Array<[RoleName, RoleEvent['type'][]]> = [
    ['uninitialized', []],
    ['primary', ['BOOTSTRAP_STARTED']],
    ['replica', ['CLONE_COMPLETED']],
    ['promoted', ['CLONE_COMPLETED', 'PROMOTE_STARTED']],
    ['demoted', ['BOOTSTRAP_STARTED', 'DEMOTED']],
    ['standby_leader', ['DETECTED_REPLICA', 'STANDBY_LEADER']],
  ];

  it.each(paths)('reaches %s and records each step', (target, events) => {
    const { actor, recorded } = recordedActor(roleMachine, 'role');
    for (const type of events) actor.send({ type } as RoleEvent);
    expect(actor.getSnapshot().value).toBe(target);
    expect(recorded.map((e) => e.cause)).toEqual(['xstate.init', ...events]);
    expect(recorded[recorded.length - 1].to).toBe(target);
  });

  it('walks a switchover: replica → promoted → primary → demoted → replica', () => {
    const { actor, recorded } = recordedActor(roleMachine, 'role');
    for (const type of ['DETECTED_REPLICA', 'PROMOTE_STARTED', 'PROMOTE_COMPLETED', 'DEMOTED', 'FOLLOWING'] as const)
      actor.send({ type });
    expect(recorded.map((e) => `${e.from}->${e.to}`)).toEqual([
      'null->uninitialized',
      'uninitialized->replica',
      'replica->promoted',
      'promoted->primary',
      'primary->demoted',
      'demoted->replica',
    ]);
  });

  it('data removal returns any role to uninitialized', () => {
    const { actor } = recordedActor(roleMachine, 'role');
    actor.send({ type: 'BOOTSTRAP_STARTED' });
    actor.send({ type: 'DATA_REMOVED' });
    expect(actor.getSnapshot().value).toBe('uninitialized');
  });

  it('records each change of upstream, so a replay knows whom a replica streamed from', () => {
    const { actor, recorded } = recordedActor(roleMachine, 'role');
    actor.send({ type: 'CLONE_COMPLETED' });
    actor.send({ type: 'UPSTREAM_CHANGED', upstream: 'n2' });
    actor.send({ type: 'UPSTREAM_CHANGED', upstream: 'n3' });
    expect(actor.getSnapshot().context.upstream).toBe('n3');
    expect(recorded.slice(2).map((e) => [e.from, e.to, e.data?.event])).toEqual([
      ['replica', 'replica', { type: 'UPSTREAM_CHANGED', upstream: 'n2' }],
      ['replica', 'replica', { type: 'UPSTREAM_CHANGED', upstream: 'n3' }],
    ]);
  });

  it('does not promote a primary again (an illegal event is not a transition)', () => {
    const { actor, recorded } = recordedActor(roleMachine, 'role');
    actor.send({ type: 'BOOTSTRAP_STARTED' });
    actor.send({ type: 'PROMOTE_STARTED' });
    expect(actor.getSnapshot().value).toBe('primary');
    expect(recorded).toHaveLength(2);
  });
});

describe('leadership machine', () => {
  it('records acquisition, loss and release of the lock with their reasons', () => {
    const { actor, recorded } = recordedActor(leadershipMachine, 'leadership');
    const leadership = actor as unknown as { send: (e: object) => void; getSnapshot: () => { value: string } };
    leadership.send({ type: 'LOCK_ACQUIRED', reason: 'won the leader race' });
    leadership.send({ type: 'LOCK_LOST', reason: 'failed to update leader lock in DCS' });
    leadership.send({ type: 'LOCK_ACQUIRED', reason: 'won the leader race' });
    leadership.send({ type: 'LOCK_RELEASED', reason: 'shutdown' });
    expect(recorded.map((e) => [e.from, e.to, e.cause])).toEqual([
      [null, 'follower', 'xstate.init'],
      ['follower', 'leader', 'LOCK_ACQUIRED'],
      ['leader', 'follower', 'LOCK_LOST'],
      ['follower', 'leader', 'LOCK_ACQUIRED'],
      ['leader', 'follower', 'LOCK_RELEASED'],
    ]);
    expect(recorded[2].data?.event).toEqual({ type: 'LOCK_LOST', reason: 'failed to update leader lock in DCS' });
  });

  it('keeps the lease end in its context: set on acquisition, moved on by unrecorded refreshes, cleared on loss', () => {
    const { actor, recorded } = recordedActor(leadershipMachine, 'leadership');
    const leadership = actor as unknown as {
      send: (e: object) => void;
      getSnapshot: () => { context: { validUntil: number; inFailsafe: boolean } };
    };
    leadership.send({ type: 'LOCK_ACQUIRED', reason: 'won the leader race', validUntil: 10_000 });
    expect(leadership.getSnapshot().context).toEqual({ validUntil: 10_000, inFailsafe: false });
    leadership.send({ type: 'LOCK_REFRESHED', validUntil: 12_000 });
    leadership.send({ type: 'LOCK_REFRESHED', validUntil: 14_000, failsafe: true });
    expect(leadership.getSnapshot().context).toEqual({ validUntil: 14_000, inFailsafe: true });
    leadership.send({ type: 'LOCK_LOST', reason: 'failed to update leader lock in DCS' });
    expect(leadership.getSnapshot().context).toEqual({ validUntil: 0, inFailsafe: false });
    expect(recorded.map((e) => e.cause)).toEqual(['xstate.init', 'LOCK_ACQUIRED', 'LOCK_LOST']);
    expect(recorded[1].data?.event).toEqual({
      type: 'LOCK_ACQUIRED',
      reason: 'won the leader race',
      validUntil: 10_000,
    });
  });
});
