import { Actor, AnyActorRef, createActor, EventObject, fromCallback, setup } from 'xstate';
import { TimerClock } from '../common/clock';
import { NewEvent } from '../events/event';
import { EventSink, systemTransitionRecorder } from '../events/transition-recorder';
import { postgresMachine } from '../postgresql/postgres.machine';
import { HA_MEMORY_EVENT_TYPES, haMemoryMachine, recordedMemoryEvent } from './ha-memory.machine';
import { leadershipMachine } from './leadership.machine';
import { RestartScheduler } from './restart-scheduler';
import { roleMachine } from './role.machine';
import { Sampler } from './sampler';
import { recordedTaskEvent, taskMachine } from './task.machine';

/**
 * The systemIds of one node's actor system. The root (`node`) invokes them all: `recorder` and
 * `memory` for the node's whole life; the postgres, role, leadership and task machines from wiring
 * until the agent stops; `restartScheduler` from the HA cycle's start until it stops, and `sampler`
 * from the adoption of a running server on. `root.system.get(systemId)` finds each.
 */
export const NODE_SYSTEM_IDS = [
  'recorder',
  'memory',
  'postgres',
  'role',
  'leadership',
  'task',
  'restartScheduler',
  'sampler',
] as const;
export type NodeSystemId = (typeof NODE_SYSTEM_IDS)[number];

/** How the root's life moves: START (the HA cycle starts), SAMPLING_STARTED, STOPPING (the cycle ended), STOPPED. */
export type NodeSystemEvent =
  { type: 'START' } | { type: 'SAMPLING_STARTED' } | { type: 'STOPPING' } | { type: 'STOPPED' };

export interface NodeSystemInput {
  /** Where the node's events go: the agent's EventRecorder. */
  sink: EventSink;
  sampler: Sampler;
  scheduler: RestartScheduler;
}

/** What the `recorder` actor is told: one event for the log. */
export interface RecordEvent {
  type: 'RECORD';
  event: NewEvent;
}

/** The `recorder` actor: every event the node records passes through it, in order, to the agent's recorder. */
const recorderActor = fromCallback<RecordEvent, EventSink>(({ input, receive }) => {
  receive((message) => {
    input.record(message.event);
  });
});

/** The `sampler` actor: the sampler reads PostgreSQL while the actor runs. */
const samplerActor = fromCallback<EventObject, Sampler>(({ input }) => {
  input.start();
  return () => input.stop();
});

/** The `restartScheduler` actor: the scheduler's wake timer lives as long as the actor. */
const restartSchedulerActor = fromCallback<EventObject, RestartScheduler>(
  ({ input }) =>
    () =>
      input.stop(),
);

/** The root machine of one node's actor system, with the postgres and task machines as the node runs them. */
export function nodeSystemMachine(machines: { postgres: typeof postgresMachine; task: typeof taskMachine }) {
  return setup({
    types: { input: {} as NodeSystemInput, context: {} as NodeSystemInput, events: {} as NodeSystemEvent },
    actors: {
      recorder: recorderActor,
      memory: haMemoryMachine,
      postgres: machines.postgres,
      role: roleMachine,
      leadership: leadershipMachine,
      task: machines.task,
      restartScheduler: restartSchedulerActor,
      sampler: samplerActor,
    },
  }).createMachine({
    id: 'node',
    context: ({ input }) => input,
    invoke: [
      { id: 'recorder', systemId: 'recorder', src: 'recorder', input: ({ context }) => context.sink },
      { id: 'memory', systemId: 'memory', src: 'memory' },
    ],
    initial: 'alive',
    states: {
      alive: {
        invoke: [
          { id: 'postgres', systemId: 'postgres', src: 'postgres' },
          { id: 'role', systemId: 'role', src: 'role' },
          { id: 'leadership', systemId: 'leadership', src: 'leadership' },
          { id: 'task', systemId: 'task', src: 'task' },
        ],
        initial: 'wired',
        states: {
          wired: { on: { START: 'cycling' } },
          cycling: {
            invoke: {
              id: 'restartScheduler',
              systemId: 'restartScheduler',
              src: 'restartScheduler',
              input: ({ context }) => context.scheduler,
            },
            initial: 'adopting',
            states: {
              adopting: { on: { SAMPLING_STARTED: 'sampling' } },
              sampling: {
                invoke: { id: 'sampler', systemId: 'sampler', src: 'sampler', input: ({ context }) => context.sampler },
              },
            },
            on: { STOPPING: 'draining' },
          },
          draining: {},
        },
        on: { STOPPED: 'stopped' },
      },
      stopped: {},
    },
  });
}

export type NodeSystem = Actor<ReturnType<typeof nodeSystemMachine>>;

/**
 * Creates and starts one node's actor system. Each machine's transitions are recorded on
 * `node/<node>/<machine>` as before (the memory's bounded, the task's without its work), through the
 * `recorder` actor, so every event of the node is in the log in the order it happened.
 */
export function startNodeSystem(
  node: string,
  machines: { postgres: typeof postgresMachine; task: typeof taskMachine },
  input: NodeSystemInput,
  clock: TimerClock,
): NodeSystem {
  let root: NodeSystem | null = null;
  const throughRecorder: EventSink = { record: (event) => recorderOf(root!).send({ type: 'RECORD', event }) };
  root = createActor(nodeSystemMachine(machines), {
    input,
    clock: xstateClockOf(clock),
    inspect: systemTransitionRecorder(node, throughRecorder, clock, {
      postgres: { machine: 'postgres' },
      role: { machine: 'role' },
      leadership: { machine: 'leadership' },
      task: { machine: 'task', recordedEvent: recordedTaskEvent },
      memory: { machine: 'memory', contextEvents: HA_MEMORY_EVENT_TYPES, recordedEvent: recordedMemoryEvent },
    }),
  });
  root.start();
  return root;
}

/** The node's `recorder` actor, as its system registered it. */
export function recorderOf(root: NodeSystem): AnyActorRef {
  const recorder = root.system.get('recorder') as AnyActorRef | undefined;
  if (!recorder) throw new Error('the node system has no recorder actor');
  return recorder;
}

/** XState's timers (a procedure's deadline) on the node's clock, so that tests can move them by hand. */
export function xstateClockOf(clock: TimerClock) {
  const cancels = new Map<number, () => void>();
  let nextId = 1;
  return {
    setTimeout: (callback: (...args: unknown[]) => void, ms: number) => {
      const id = nextId++;
      cancels.set(
        id,
        clock.setTimer(() => {
          cancels.delete(id);
          callback();
        }, ms),
      );
      return id;
    },
    clearTimeout: (id: unknown) => {
      cancels.get(id as number)?.();
      cancels.delete(id as number);
    },
  };
}
