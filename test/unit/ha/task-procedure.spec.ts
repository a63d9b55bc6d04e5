import { createActor } from 'xstate';
import { ManualClock } from '../../../src/common/clock';
import { replayTransitions } from '../../../src/audit/transition-replay';
import { NewEvent, RecordedEvent } from '../../../src/events/event';
import { transitionRecorder } from '../../../src/events/transition-recorder';
import { NodeEvents } from '../../../src/ha/node-events';
import { xstateClockOf } from '../../../src/ha/node-system';
import { nodeTaskMachine } from '../../../src/ha/task-procedure';
import { recordedTaskEvent, ProcedureWork } from '../../../src/ha/task.machine';

/** The task machine as the node runs it, on a clock moved by hand, its transitions and facts in one log. */
function nodeTask() {
  const clock = new ManualClock();
  const log: NewEvent[] = [];
  const sink = { record: (event: NewEvent) => log.push(event) };
  const lines: string[] = [];
  const logger = {
    debug: () => undefined,
    info: () => undefined,
    warning: (line: string) => lines.push(line),
    error: (line: string) => lines.push(line),
  } as never;
  const events = new NodeEvents('n1', sink, clock, () => 3);
  const actor = createActor(nodeTaskMachine({ clock, logger, events }), {
    clock: xstateClockOf(clock),
    inspect: transitionRecorder('task', 'n1', sink, clock, { recordedEvent: recordedTaskEvent }),
  });
  actor.start();
  const start = (task: string, run: ProcedureWork, deadlineMs: number | null) =>
    new Promise<void>((settled) =>
      actor.send({ type: 'TASK_STARTED', task, at: clock.monotonic(), deadlineMs, run, settled }),
    );
  return { clock, log, lines, actor, start };
}

/** The log as the store would number it: a seq per stream. */
function numbered(log: NewEvent[]): RecordedEvent[] {
  const seqs = new Map<string, number>();
  return log.map((event) => {
    const seq = (seqs.get(event.stream) ?? 0) + 1;
    seqs.set(event.stream, seq);
    return { ...event, seq } as RecordedEvent;
  });
}

describe('a procedure as the task machine invokes it', () => {
  it('one that never settles is ended at its deadline: aborted, recorded as task.deadline_exceeded, and a failure the backoff counts', async () => {
    const { clock, log, lines, actor, start } = nodeTask();
    let aborted: unknown = null;
    const hanging: ProcedureWork = (signal) =>
      new Promise((_resolve, reject) =>
        signal.addEventListener('abort', () => {
          aborted = signal.reason;
          reject(signal.reason as Error);
        }),
      );
    const settled = start('restart', hanging, 90_000);
    const startedAt = clock.monotonic();
    clock.advance(89_999);
    expect(actor.getSnapshot().value).toBe('busy');
    expect(aborted).toBeNull();
    clock.advance(1);
    await settled;

    expect(actor.getSnapshot().value).toBe('idle');
    expect((aborted as Error).message).toBe('restart did not finish within its deadline of 90 s: given up');
    expect(actor.getSnapshot().context).toMatchObject({
      task: null,
      lastTask: 'restart',
      lastError: 'restart did not finish within its deadline of 90 s: given up',
      lastEndedAt: startedAt + 90_000,
      failuresInRow: 1,
    });
    const giveUp = log.find((event) => event.type === 'task.deadline_exceeded');
    expect(giveUp).toMatchObject({
      stream: 'cluster',
      node: 'n1',
      cause: 'restart did not finish within its deadline of 90 s: given up',
      data: { task: 'restart', deadlineMs: 90_000, timeline: 3 },
    });
    expect(lines).toContain('restart did not finish within its deadline of 90 s: given up');
    // The give-up is the recorded transition; the aborted work's own end comes after it and is not recorded.
    const transitions = log.filter((event) => event.type === 'task.transition');
    expect(transitions.map((event) => [event.from, event.to, event.cause])).toEqual([
      [null, 'idle', 'xstate.init'],
      ['idle', 'busy', 'TASK_STARTED'],
      ['busy', 'idle', 'xstate.after.procedureDeadline.task.busy'],
    ]);
    // The log keeps neither the work nor its callback, and the replay goes where the node went.
    expect(Object.keys(transitions[1].data!.event as object).sort()).toEqual(['at', 'deadlineMs', 'task', 'type']);
    expect(replayTransitions(numbered(log)).problems).toEqual([]);
  });

  it("one's completion is a recorded transition, TASK_ENDED with its error, and it is not given up later", async () => {
    const { clock, log, actor, start } = nodeTask();
    let finish: (error?: Error) => void = () => undefined;
    const settled = start(
      'promote',
      () => new Promise<void>((resolve, reject) => (finish = (error) => (error ? reject(error) : resolve()))),
      60_000,
    );
    clock.advance(5_000);
    finish(new Error('promote failed: pg_ctl promote exited with code 1'));
    await settled;
    expect(actor.getSnapshot().context).toMatchObject({
      lastTask: 'promote',
      lastError: 'promote failed: pg_ctl promote exited with code 1',
      lastEndedAt: clock.monotonic(),
    });
    clock.advance(120_000);
    const transitions = log.filter((event) => event.type === 'task.transition');
    expect(transitions.map((event) => [event.from, event.to, event.cause])).toEqual([
      [null, 'idle', 'xstate.init'],
      ['idle', 'busy', 'TASK_STARTED'],
      ['busy', 'idle', 'TASK_ENDED'],
    ]);
    expect(transitions[2].data!.event).toMatchObject({ task: 'promote', error: expect.stringContaining('code 1') });
    expect(log.some((event) => event.type === 'task.deadline_exceeded')).toBe(false);
    expect(replayTransitions(numbered(log)).problems).toEqual([]);
  });

  it('one overtaken by a newer procedure (a restart) is not aborted: it runs on, and the newest is the one reported', async () => {
    const { clock, actor, start } = nodeTask();
    let signalOfFirst: AbortSignal | null = null;
    let finishFirst = () => undefined as void;
    void start(
      'start',
      (signal) => {
        signalOfFirst = signal;
        return new Promise<void>((resolve) => (finishFirst = resolve));
      },
      60_000,
    );
    let finishRestart = () => undefined as void;
    const restarted = start('restart', () => new Promise<void>((resolve) => (finishRestart = resolve)), 60_000);
    expect(actor.getSnapshot().context.task).toBe('restart');
    finishFirst();
    await Promise.resolve();
    // The overtaken procedure's end does not end the newer one's state.
    expect(actor.getSnapshot().value).toBe('busy');
    expect(signalOfFirst!.aborted).toBe(false);
    clock.advance(1_000);
    finishRestart();
    await restarted;
    expect(actor.getSnapshot().context).toMatchObject({ task: null, lastTask: 'restart', lastError: null });
  });
});
