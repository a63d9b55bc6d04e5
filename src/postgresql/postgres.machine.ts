import { assign, fromPromise, setup } from 'xstate';
import { errorText } from '../common/error-text';
import { BootstrapMethod } from '../config/config.types';
import { PostgresSettings, StopEscalation, StopMode, UpstreamNode } from './postgres.port';
import { CloneInput, PostgresContext, PostgresEvent, StartRequest, StopRequest } from './postgres-machine-types';

/**
 * The `postgres` machine: the 15 PostgreSQL states of the spec. The HA loop sends commands; the
 * side effects run as invoked actors with explicit ids, implemented over the PostgresProcess port
 * (see postgres-actors.ts). A postmaster exit reaches the machine as POSTMASTER_EXITED the moment the
 * fence reports it.
 */

const notProvided = (name: string) =>
  fromPromise<never, unknown>(async () => {
    throw new Error(`actor ${name} not provided`);
  });

/** What a node whose postmaster is down (start or restart failed, crashed) can do next. */
const AFTER_POSTMASTER_DOWN = {
  START: { target: 'starting', actions: ['clearOutcome', 'rememberStartRequest'] },
  REWIND: { target: 'stopped.rewinding', actions: 'clearOutcome' },
  CLONE: { target: 'creating_replica', actions: ['clearOutcome', 'rememberCloneRequest'] },
  REMOVE_DATA: { target: 'stopped.removingData', actions: 'clearOutcome' },
  STOP: { target: 'stopped' },
} as const;

/**
 * A start that ran out of its deadline leaves its postmaster running (it may still come up), so a
 * STOP stops whatever runs there; with nothing running the stop ends at once.
 */
const AFTER_FAILED_START = {
  ...AFTER_POSTMASTER_DOWN,
  STOP: { target: 'stopping' },
} as const;

export const postgresMachine = setup({
  types: {
    context: {} as PostgresContext,
    events: {} as PostgresEvent,
  },
  actors: {
    runInitdb: notProvided('runInitdb') as ReturnType<typeof fromPromise<void, void>>,
    runCustomBootstrap: notProvided('runCustomBootstrap') as ReturnType<
      typeof fromPromise<void, { method: BootstrapMethod }>
    >,
    cloneReplica: notProvided('cloneReplica') as ReturnType<typeof fromPromise<void, CloneInput>>,
    startPostgres: notProvided('startPostgres') as ReturnType<typeof fromPromise<{ pid: number }, StartRequest>>,
    stopPostgres: notProvided('stopPostgres') as ReturnType<typeof fromPromise<void, StopRequest>>,
    restartPostgres: notProvided('restartPostgres') as ReturnType<
      typeof fromPromise<{ pid: number }, { start: StartRequest; mode: StopMode }>
    >,
    promotePostgres: notProvided('promotePostgres') as ReturnType<typeof fromPromise<void, { timeoutMs: number }>>,
    reconfigurePostgres: notProvided('reconfigurePostgres') as ReturnType<
      typeof fromPromise<void, { settings: PostgresSettings }>
    >,
    rewindData: notProvided('rewindData') as ReturnType<
      typeof fromPromise<'rewound' | 'not_needed', { source: UpstreamNode; crashRecovery: boolean }>
    >,
    removeData: notProvided('removeData') as ReturnType<typeof fromPromise<void, void>>,
  },
  guards: {
    isPaused: ({ context }) => context.paused,
    /**
     * The exit of a postmaster other than the one this state is about: running, not the running one's; starting,
     * the one that ran before (a fence killed with it reports its exit late, after the start began). Such an exit
     * crashed or failed a server that went on running unseen.
     */
    isOtherPostmasterExit: ({ context, event }) =>
      event.type === 'POSTMASTER_EXITED' &&
      event.pid !== undefined &&
      (context.pid !== null ? event.pid !== context.pid : event.pid === context.lastPid),
  },
  actions: {
    clearOutcome: assign({ lastError: null, lastExitCode: null, lastOutcome: null }),
    rememberError: assign({
      lastError: ({ event }) => errorText((event as { error?: unknown }).error),
      lastExitCode: ({ event }) => exitCodeOf((event as { error?: unknown }).error),
    }),
    rememberPid: assign(({ event }) => {
      const pid = (event as { output?: { pid: number } }).output?.pid ?? null;
      return { pid, lastPid: pid };
    }),
    forgetPid: assign({ pid: null }),
    rememberBootstrapStart: assign({
      bootstrapStart: ({ event }) => (event.type === 'CUSTOM_BOOTSTRAP' ? event.start : null),
    }),
    rememberPause: assign({ paused: ({ event }) => (event.type === 'SET_PAUSE' ? event.paused : false) }),
    rememberStartRequest: assign({
      lastStartAt: ({ event, context }) =>
        event.type === 'START' || event.type === 'RESTART' ? (event.start.at ?? null) : context.lastStartAt,
    }),
    countFailedStart: assign({ failedStarts: ({ context }) => context.failedStarts + 1 }),
    resetFailedStarts: assign({ failedStarts: 0 }),
    rememberCloneRequest: assign({
      lastCloneAt: ({ event, context }) => (event.type === 'CLONE' ? (event.at ?? null) : context.lastCloneAt),
    }),
    rememberExitWhileStarting: assign({
      lastError: ({ event }) =>
        `postmaster exited while starting${event.type === 'POSTMASTER_EXITED' && event.lastLog ? `: ${event.lastLog}` : ''}`,
    }),
  },
}).createMachine({
  id: 'postgres',
  initial: 'stopped',
  context: {
    paused: false,
    lastError: null,
    lastExitCode: null,
    lastOutcome: null,
    pid: null,
    lastPid: null,
    bootstrapStart: null,
    failedStarts: 0,
    lastStartAt: null,
    failedClones: 0,
    lastCloneAt: null,
    lastStopEscalation: null,
  },
  on: {
    SET_PAUSE: { actions: 'rememberPause' },
  },
  states: {
    stopped: {
      entry: 'forgetPid',
      initial: 'idle',
      states: {
        idle: {},
        rewinding: {
          invoke: {
            id: 'rewindData',
            src: 'rewindData',
            input: ({ event }) => {
              if (event.type !== 'REWIND') throw new Error(`rewind entered by ${event.type}`);
              return { source: event.source, crashRecovery: event.crashRecovery };
            },
            onDone: { target: 'idle', actions: assign({ lastOutcome: ({ event }) => event.output }) },
            onError: { target: 'idle', actions: 'rememberError' },
          },
        },
        removingData: {
          invoke: {
            id: 'removeData',
            src: 'removeData',
            onDone: { target: 'idle', actions: assign({ lastOutcome: 'data_removed' }) },
            onError: { target: 'idle', actions: 'rememberError' },
          },
        },
      },
      on: {
        INITDB: { target: 'initdb', actions: 'clearOutcome' },
        CUSTOM_BOOTSTRAP: { target: 'custom_bootstrap', actions: ['clearOutcome', 'rememberBootstrapStart'] },
        CLONE: { target: 'creating_replica', actions: ['clearOutcome', 'rememberCloneRequest'] },
        START: { target: 'starting', actions: ['clearOutcome', 'rememberStartRequest'] },
        ADOPT: { target: 'starting', actions: 'clearOutcome' },
        REWIND: { target: '.rewinding', actions: 'clearOutcome' },
        REMOVE_DATA: { target: '.removingData', actions: 'clearOutcome' },
      },
    },
    initdb: {
      invoke: {
        id: 'runInitdb',
        src: 'runInitdb',
        onDone: { target: 'stopped', actions: assign({ lastOutcome: 'initialized' }) },
        onError: { target: 'initdb_failed', actions: 'rememberError' },
      },
    },
    initdb_failed: {
      on: {
        INITDB: { target: 'initdb', actions: 'clearOutcome' },
        CLONE: { target: 'creating_replica', actions: ['clearOutcome', 'rememberCloneRequest'] },
        REMOVE_DATA: { target: 'stopped.removingData', actions: 'clearOutcome' },
      },
    },
    custom_bootstrap: {
      invoke: {
        id: 'runCustomBootstrap',
        src: 'runCustomBootstrap',
        input: ({ event }) => {
          if (event.type !== 'CUSTOM_BOOTSTRAP') throw new Error(`custom bootstrap entered by ${event.type}`);
          return { method: event.method };
        },
        onDone: { target: 'bootstrap_starting' },
        onError: { target: 'custom_bootstrap_failed', actions: 'rememberError' },
      },
    },
    custom_bootstrap_failed: {
      on: {
        CUSTOM_BOOTSTRAP: { target: 'custom_bootstrap', actions: ['clearOutcome', 'rememberBootstrapStart'] },
        CLONE: { target: 'creating_replica', actions: ['clearOutcome', 'rememberCloneRequest'] },
        REMOVE_DATA: { target: 'stopped.removingData', actions: 'clearOutcome' },
      },
    },
    bootstrap_starting: {
      // Entered from custom_bootstrap's done event, whose trigger carried the start request.
      invoke: {
        id: 'startAfterBootstrap',
        src: 'startPostgres',
        input: ({ context }) => {
          if (!context.bootstrapStart) throw new Error('custom bootstrap finished without a start request');
          return context.bootstrapStart;
        },
        onDone: { target: 'running', actions: 'rememberPid' },
        onError: { target: 'start_failed', actions: 'rememberError' },
      },
      on: {
        POSTMASTER_EXITED: [
          { guard: 'isOtherPostmasterExit' },
          { target: 'start_failed', actions: 'rememberExitWhileStarting' },
        ],
      },
    },
    creating_replica: {
      invoke: {
        id: 'cloneReplica',
        src: 'cloneReplica',
        input: ({ event }) => {
          if (event.type !== 'CLONE') throw new Error(`clone entered by ${event.type}`);
          return { source: event.source, method: event.method };
        },
        // As the reference: the clone ends in `stopped` whatever its outcome; the HA loop reads lastError.
        onDone: { target: 'stopped', actions: assign({ lastOutcome: 'cloned', failedClones: 0 }) },
        onError: {
          target: 'stopped',
          actions: ['rememberError', assign({ failedClones: ({ context }) => context.failedClones + 1 })],
        },
      },
    },
    starting: {
      invoke: {
        id: 'startPostgres',
        src: 'startPostgres',
        input: ({ event }) => {
          if (event.type === 'START') return event.start;
          if (event.type === 'ADOPT') return { settings: null, timeoutMs: event.timeoutMs };
          throw new Error(`start entered by ${event.type}`);
        },
        onDone: { target: 'running', actions: 'rememberPid' },
        onError: { target: 'start_failed', actions: 'rememberError' },
      },
      on: {
        POSTMASTER_EXITED: [
          { guard: 'isOtherPostmasterExit' },
          { target: 'start_failed', actions: 'rememberExitWhileStarting' },
        ],
        STOP: { target: 'stopping', actions: 'clearOutcome' },
      },
    },
    start_failed: {
      entry: ['forgetPid', 'countFailedStart'],
      on: AFTER_FAILED_START,
    },
    running: {
      entry: 'resetFailedStarts',
      initial: 'idle',
      states: {
        idle: {},
        promoting: {
          invoke: {
            id: 'promotePostgres',
            src: 'promotePostgres',
            input: ({ event }) => ({ timeoutMs: event.type === 'PROMOTE' ? event.timeoutMs : 60_000 }),
            onDone: { target: 'idle', actions: assign({ lastOutcome: 'promoted' }) },
            onError: { target: 'idle', actions: 'rememberError' },
          },
        },
        reconfiguring: {
          invoke: {
            id: 'reconfigurePostgres',
            src: 'reconfigurePostgres',
            input: ({ event }) => {
              if (event.type !== 'RECONFIGURE') throw new Error(`reconfigure entered by ${event.type}`);
              return { settings: event.settings };
            },
            onDone: { target: 'idle', actions: assign({ lastOutcome: 'reconfigured' }) },
            onError: { target: 'idle', actions: 'rememberError' },
          },
        },
      },
      on: {
        PROMOTE: { target: '.promoting', actions: 'clearOutcome' },
        RECONFIGURE: { target: '.reconfiguring', actions: 'clearOutcome' },
        STOP: { target: 'stopping', actions: 'clearOutcome' },
        RESTART: { target: 'restarting', actions: ['clearOutcome', 'rememberStartRequest'] },
        POSTMASTER_EXITED: [
          { guard: 'isOtherPostmasterExit' },
          { guard: 'isPaused', target: 'stopped' },
          { target: 'crashed', actions: assign({ lastError: ({ event }) => describeExit(event) }) },
        ],
      },
    },
    restarting: {
      invoke: {
        id: 'restartPostgres',
        src: 'restartPostgres',
        input: ({ event }) => {
          if (event.type !== 'RESTART') throw new Error(`restart entered by ${event.type}`);
          return { start: event.start, mode: event.mode };
        },
        onDone: { target: 'running', actions: 'rememberPid' },
        onError: { target: 'restart_failed', actions: 'rememberError' },
      },
    },
    restart_failed: {
      entry: ['forgetPid', 'countFailedStart'],
      on: AFTER_FAILED_START,
    },
    stopping: {
      entry: assign({ lastStopEscalation: null }),
      invoke: {
        id: 'stopPostgres',
        src: 'stopPostgres',
        input: ({ event, self }) => ({
          ...(event.type === 'STOP'
            ? { mode: event.mode, timeoutMs: event.timeoutMs }
            : { mode: 'fast' as const, timeoutMs: 60_000 }),
          // Each escalation step comes back as an event, so the log shows the immediate shutdown and the SIGKILL.
          onEscalation: (step: StopEscalation) => self.send({ type: 'STOP_ESCALATED', step }),
        }),
        onDone: { target: 'stopped' },
        onError: { target: 'stop_failed', actions: 'rememberError' },
      },
      on: {
        STOP_ESCALATED: { actions: assign({ lastStopEscalation: ({ event }) => event.step }) },
      },
    },
    stop_failed: {
      on: {
        STOP: { target: 'stopping', actions: 'clearOutcome' },
        POSTMASTER_EXITED: { target: 'stopped' },
      },
    },
    crashed: {
      entry: 'forgetPid',
      on: AFTER_POSTMASTER_DOWN,
    },
  },
});

function describeExit(event: { code: number | null; signal: string | null; fenced: boolean }): string {
  if (event.fenced) return 'postmaster stopped by the fence: the primary lease deadline passed';
  return `postmaster exited (${event.signal ? `signal ${event.signal}` : `code ${event.code}`})`;
}

/** The exit code a failed command reported (PostgresCommandError), else null. */
function exitCodeOf(error: unknown): number | null {
  const code = (error as { exitCode?: unknown } | null)?.exitCode;
  return typeof code === 'number' ? code : null;
}
