import { ActorRefLike, assign, fromCallback, setup } from 'xstate';

/**
 * The `task` machine: the multi-step procedure the HA cycle runs in the background (clone, rejoin,
 * promote, switchover, restart, reinitialize...), so that "busy" is a recorded state, not a field:
 * an auditor replaying the log sees when each procedure began, how it ended and why it failed.
 *
 * While `busy` the procedure runs as the invoked actor `procedure` (the node provides it:
 * task-procedure.ts), which sends TASK_ENDED when the work settles. A procedure with a deadline that
 * has not ended by then is given up: the machine leaves `busy` at the deadline (a recorded transition,
 * cause `xstate.after.procedureDeadline.task.busy`), tells the procedure to abort (its AbortSignal), and
 * runs `gaveUp` (the node records `task.deadline_exceeded`).
 */
export type TaskEvent =
  | {
      type: 'TASK_STARTED';
      task: string;
      /** When it began (monotonic ms) and how long it may run (null: no deadline of its own). */
      at?: number;
      deadlineMs?: number | null;
      /** The work itself, and who is told once it settled: for the live node only, the log keeps neither (recordedTaskEvent). */
      run?: ProcedureWork;
      settled?: () => void;
    }
  | { type: 'TASK_ENDED'; task: string; error?: string; at?: number };

/** A procedure's work: it stops its steps when `signal` aborts (its deadline passed). */
export type ProcedureWork = (signal: AbortSignal) => Promise<void>;

/** What the `procedure` actor receives when its deadline passed: abort now. */
export const DEADLINE_EXCEEDED = 'DEADLINE_EXCEEDED';

export interface TaskContext {
  /** The running procedure, null when idle. */
  task: string | null;
  /** Why the last procedure failed, null when it succeeded. */
  lastError: string | null;
  /** The last procedure that ended, when (epoch ms), and how many times in a row it failed: a retry waits a backoff. */
  lastTask: string | null;
  lastEndedAt: number | null;
  failuresInRow: number;
  /** The running procedure's start (monotonic ms) and deadline, null when it has none. */
  startedAt: number | null;
  deadlineMs: number | null;
}

/** The event that ends `busy` at the procedure's deadline. */
export const TASK_DEADLINE_EVENT = 'xstate.after.procedureDeadline.task.busy';

function ended(context: TaskContext, task: string, error: string | null, at: number | null): Partial<TaskContext> {
  const sameTask = context.lastTask === task;
  return {
    task: null,
    lastError: error,
    lastTask: task,
    lastEndedAt: at,
    failuresInRow: error !== null ? (sameTask ? context.failuresInRow : 0) + 1 : 0,
    startedAt: null,
    deadlineMs: null,
  };
}

/** Why a procedure was given up: its name and deadline, as the log and the API say it. */
export function deadlineError(task: string, deadlineMs: number): string {
  return `${task} did not finish within its deadline of ${Math.round(deadlineMs / 1000)} s: given up`;
}

export const taskMachine = setup({
  types: { context: {} as TaskContext, events: {} as TaskEvent },
  actors: {
    // The node provides the procedure that runs the work (task-procedure.ts); this one runs nothing.
    procedure: fromCallback<TaskEvent, TaskEvent>(() => undefined),
  },
  actions: {
    begin: assign({
      task: ({ event }) => (event.type === 'TASK_STARTED' ? event.task : null),
      lastError: null,
      startedAt: ({ event }) => (event.type === 'TASK_STARTED' ? (event.at ?? null) : null),
      deadlineMs: ({ event }) => (event.type === 'TASK_STARTED' ? (event.deadlineMs ?? null) : null),
    }),
    end: assign(({ event, context }) =>
      event.type === 'TASK_ENDED' ? ended(context, event.task, event.error ?? null, event.at ?? null) : {},
    ),
    /** Given up at the deadline: a failure, ended at the deadline itself (a replay computes the same). */
    endAtDeadline: assign(({ context }) => {
      const task = context.task ?? 'task';
      const deadlineMs = context.deadlineMs ?? 0;
      const at = context.startedAt === null ? null : context.startedAt + deadlineMs;
      return ended(context, task, deadlineError(task, deadlineMs), at);
    }),
    /**
     * Before `busy` is left for the deadline (the procedure is then stopped): its AbortSignal aborts, so the
     * steps it was waiting on end too. A procedure overtaken by another (a restart) is not aborted: it ends on its own.
     */
    abortAtDeadline: ({ event, self }) => {
      if ((event.type as string) !== TASK_DEADLINE_EVENT) return;
      const procedure = self.getSnapshot().children.procedure as ActorRefLike | undefined;
      procedure?.send({ type: DEADLINE_EXCEEDED });
    },
    /** The node records `task.deadline_exceeded` (this machine alone records nothing but its transitions). */
    gaveUp: () => undefined,
  },
  delays: {
    procedureDeadline: ({ context }) => context.deadlineMs ?? 0,
  },
  guards: {
    hasDeadline: ({ context }) => context.deadlineMs !== null,
  },
}).createMachine({
  id: 'task',
  initial: 'idle',
  context: {
    task: null,
    lastError: null,
    lastTask: null,
    lastEndedAt: null,
    failuresInRow: 0,
    startedAt: null,
    deadlineMs: null,
  },
  states: {
    idle: {
      on: { TASK_STARTED: { target: 'busy', actions: 'begin' } },
    },
    busy: {
      invoke: { id: 'procedure', src: 'procedure', input: ({ event }) => event },
      exit: 'abortAtDeadline',
      after: {
        procedureDeadline: { guard: 'hasDeadline', target: 'idle', actions: ['gaveUp', 'endAtDeadline'] },
      },
      on: {
        // No guard on the task's name: a replay that starts at a retention checkpoint has the state, not the context.
        TASK_ENDED: { target: 'idle', actions: 'end' },
        // An operator's restart may start while another procedure runs: the newest is the one reported.
        TASK_STARTED: { target: 'busy', actions: 'begin', reenter: true },
      },
    },
  },
});

/** The task event as the log keeps it: without the work (a function). */
export function recordedTaskEvent(event: { type: string; [key: string]: unknown }): {
  type: string;
  [key: string]: unknown;
} {
  if (event.type !== 'TASK_STARTED') return event;
  const { run, settled, ...recorded } = event;
  return recorded;
}
