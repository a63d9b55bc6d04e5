import { assign, setup } from 'xstate';

/**
 * The `task` machine: the multi-step procedure the HA cycle runs in the background (clone, rejoin,
 * promote, switchover, restart, reinitialize...), so that "busy" is a recorded state, not a field:
 * an auditor replaying the log sees when each procedure began, how it ended and why it failed.
 */
export type TaskEvent =
  { type: 'TASK_STARTED'; task: string } | { type: 'TASK_ENDED'; task: string; error?: string; at?: number };

export interface TaskContext {
  /** The running procedure, null when idle. */
  task: string | null;
  /** Why the last procedure failed, null when it succeeded. */
  lastError: string | null;
  /** The last procedure that ended, when (epoch ms), and how many times in a row it failed: a retry waits a backoff. */
  lastTask: string | null;
  lastEndedAt: number | null;
  failuresInRow: number;
}

export const taskMachine = setup({
  types: { context: {} as TaskContext, events: {} as TaskEvent },
  actions: {
    begin: assign({ task: ({ event }) => (event.type === 'TASK_STARTED' ? event.task : null), lastError: null }),
    end: assign(({ event, context }) => {
      if (event.type !== 'TASK_ENDED') return {};
      const failed = event.error !== undefined;
      const sameTask = context.lastTask === event.task;
      return {
        task: null,
        lastError: event.error ?? null,
        lastTask: event.task,
        lastEndedAt: event.at ?? null,
        failuresInRow: failed ? (sameTask ? context.failuresInRow : 0) + 1 : 0,
      };
    }),
  },
}).createMachine({
  id: 'task',
  initial: 'idle',
  context: { task: null, lastError: null, lastTask: null, lastEndedAt: null, failuresInRow: 0 },
  states: {
    idle: {
      on: { TASK_STARTED: { target: 'busy', actions: 'begin' } },
    },
    busy: {
      on: {
        // No guard on the task's name: a replay that starts at a retention checkpoint has the state, not the context.
        TASK_ENDED: { target: 'idle', actions: 'end' },
        // An operator's restart may start while another procedure runs: the newest is the one reported.
        TASK_STARTED: { target: 'busy', actions: 'begin', reenter: true },
      },
    },
  },
});
