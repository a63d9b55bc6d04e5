import { fromCallback } from 'xstate';
import { TimerClock } from '../common/clock';
import { errorText } from '../common/error-text';
import { Logger } from '../common/logger';
import { NodeEvents } from './node-events';
import { DEADLINE_EXCEEDED, deadlineError, TaskContext, TaskEvent, taskMachine } from './task.machine';

export interface TaskProcedureDeps {
  clock: TimerClock;
  logger: Logger;
  events: NodeEvents;
}

/**
 * The `procedure` actor the task machine invokes while busy: runs the work, and sends TASK_ENDED (a
 * recorded transition) when it settles, with the error when it failed. At its deadline the machine
 * sends DEADLINE_EXCEEDED before it stops it: the work's AbortSignal aborts, so the waits of its
 * steps end (the postgres machine bounds its own child processes by pg_ctl_timeout and the like).
 */
export function procedureActor({ clock, logger }: Pick<TaskProcedureDeps, 'clock' | 'logger'>) {
  return fromCallback<TaskEvent, TaskEvent>(({ input, sendBack, receive }) => {
    if (input.type !== 'TASK_STARTED' || !input.run) return;
    const { task, run } = input;
    const controller = new AbortController();
    receive((event) => {
      if ((event.type as string) === DEADLINE_EXCEEDED)
        controller.abort(new Error(deadlineError(task, input.deadlineMs ?? 0)));
    });
    // After a stop (the deadline, or a newer procedure that overtook this one) sendBack is ignored.
    void run(controller.signal)
      .then(
        () => sendBack({ type: 'TASK_ENDED', task, at: clock.monotonic() }),
        (error: unknown) => {
          logger.error(`${task} failed: ${errorText(error)}`);
          sendBack({ type: 'TASK_ENDED', task, error: errorText(error), at: clock.monotonic() });
        },
      )
      .finally(() => input.settled?.());
  });
}

/** The task machine as the node runs it: its procedures invoked for real, a given-up one recorded and logged. */
export function nodeTaskMachine(deps: TaskProcedureDeps) {
  return taskMachine.provide({
    actors: { procedure: procedureActor(deps) },
    actions: {
      gaveUp: ({ context }: { context: TaskContext }) => {
        const task = context.task ?? 'task';
        const deadlineMs = context.deadlineMs ?? 0;
        deps.logger.error(deadlineError(task, deadlineMs));
        deps.events.recordCluster('task.deadline_exceeded', deadlineError(task, deadlineMs), {
          task,
          deadlineMs,
        });
      },
    },
  });
}
