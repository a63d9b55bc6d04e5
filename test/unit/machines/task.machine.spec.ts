import { createActor } from 'xstate';
import { ManualClock } from '../../../src/common/clock';
import { RecordedEvent } from '../../../src/events/event';
import { transitionRecorder } from '../../../src/events/transition-recorder';
import { taskMachine } from '../../../src/ha/task.machine';

function recordedTask() {
  const recorded: RecordedEvent[] = [];
  const sink = { record: (event: Omit<RecordedEvent, 'seq'>) => recorded.push({ ...event, seq: recorded.length + 1 }) };
  const actor = createActor(taskMachine, { inspect: transitionRecorder('task', 'n1', sink, new ManualClock()) });
  actor.start();
  return { actor, recorded };
}

describe('task machine', () => {
  it('records when a procedure began and how it ended, with the failure', () => {
    const { actor, recorded } = recordedTask();
    actor.send({ type: 'TASK_STARTED', task: 'clone' });
    expect(actor.getSnapshot().context.task).toBe('clone');
    actor.send({ type: 'TASK_ENDED', task: 'clone', error: 'pg_basebackup exited with code 1' });
    expect(actor.getSnapshot().value).toBe('idle');
    expect(actor.getSnapshot().context).toEqual({
      task: null,
      lastError: 'pg_basebackup exited with code 1',
      lastTask: 'clone',
      lastEndedAt: null,
      failuresInRow: 1,
      startedAt: null,
      deadlineMs: null,
    });
    expect(recorded.map((e) => [e.from, e.to, (e.data?.event as { task?: string }).task ?? null])).toEqual([
      [null, 'idle', null],
      ['idle', 'busy', 'clone'],
      ['busy', 'idle', 'clone'],
    ]);
    expect((recorded[2].data?.event as { error: string }).error).toBe('pg_basebackup exited with code 1');
  });

  it('reports the newest procedure when a restart overtakes another, and records that start although the state stays busy', () => {
    const { actor, recorded } = recordedTask();
    actor.send({ type: 'TASK_STARTED', task: 'rejoin' });
    actor.send({ type: 'TASK_STARTED', task: 'restart' });
    expect(actor.getSnapshot().context.task).toBe('restart');
    actor.send({ type: 'TASK_ENDED', task: 'restart' });
    expect(actor.getSnapshot().value).toBe('idle');
    // A replay needs the overtaking start: it is recorded although the state stays `busy`.
    expect(recorded.map((e) => e.cause)).toEqual(['xstate.init', 'TASK_STARTED', 'TASK_STARTED', 'TASK_ENDED']);
  });

  it('counts the failures of the same procedure in a row, from the recorded end times, and starts over after a success', () => {
    const { actor } = recordedTask();
    const run = (error?: string, at = 0) => {
      actor.send({ type: 'TASK_STARTED', task: 'rejoin' });
      actor.send({ type: 'TASK_ENDED', task: 'rejoin', ...(error ? { error } : {}), at });
    };
    run('leader does not answer', 1000);
    run('leader does not answer', 3000);
    expect(actor.getSnapshot().context).toMatchObject({ lastTask: 'rejoin', lastEndedAt: 3000, failuresInRow: 2 });
    run(undefined, 9000);
    expect(actor.getSnapshot().context).toMatchObject({ lastError: null, lastEndedAt: 9000, failuresInRow: 0 });
  });
});
