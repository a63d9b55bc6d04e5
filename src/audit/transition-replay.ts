import { AnyActorRef, AnyStateMachine, createActor, fromPromise, StateValue } from 'xstate';
import { RecordedEvent } from '../events/event';
import { stateValueToString } from '../events/transition-recorder';
import { MACHINES } from '../statecharts/machines';

/** A finding tied to one event: its stream, seq and index in the audited list. */
export interface PositionedProblem {
  stream: string;
  seq: number;
  index: number;
  message: string;
}

/** How one node machine's recorded history ends, in the replay and in the log. */
export interface MachineEnding {
  stream: string;
  /** The last transition event of the stream, and its index in the audited list. */
  last: RecordedEvent;
  lastIndex: number;
  /** Where the replayed machine ended; null when it could not be replayed (unknown machine or state). */
  replayed: string | null;
}

export interface TransitionReplay {
  /** Transition events replayed. */
  transitions: number;
  /** Illegal transitions: the machine was not where the event says it started, or did not go where it says it went. */
  problems: PositionedProblem[];
  endings: MachineEnding[];
}

const TRANSITION_SUFFIX = '.transition';
const INIT_EVENT = 'xstate.init';

/**
 * Replays every node stream's `<machine>.transition` events (in seq order) through the real
 * machine of MACHINES, with invoked actors that never settle so that no side effect runs: their
 * done and error events are in the log and are sent like any other. A transition from null with
 * cause `xstate.init` starts a fresh machine (a new agent incarnation); any other is sent as its
 * recorded `data.event` (or `{type: cause}`), and the machine must be in `from` before and in `to`
 * after. Events with from === to (context changes such as SET_PAUSE) are sent the same way.
 *
 * After a mismatch the replay carries on from the recorded state, so one bad event is reported
 * once rather than for everything after it. A stream in `startsAtCheckpoint` lost its beginning
 * to retention: its machine starts in the `from` of its first retained event.
 */
export function replayTransitions(
  events: RecordedEvent[],
  startsAtCheckpoint: ReadonlySet<string> = new Set(),
): TransitionReplay {
  const streams = new Map<string, { event: RecordedEvent; index: number }[]>();
  events.forEach((event, index) => {
    if (!event.type.endsWith(TRANSITION_SUFFIX) || !event.stream.startsWith('node/')) return;
    streams.set(event.stream, [...(streams.get(event.stream) ?? []), { event, index }]);
  });
  const result: TransitionReplay = { transitions: 0, problems: [], endings: [] };
  for (const [stream, entries] of streams) {
    const inSeqOrder = [...entries].sort((a, b) => a.event.seq - b.event.seq);
    result.transitions += inSeqOrder.length;
    const last = inSeqOrder[inSeqOrder.length - 1];
    const { state: replayed } = replayStream(
      inSeqOrder,
      (entry, message) => result.problems.push({ stream, seq: entry.event.seq, index: entry.index, message }),
      startsAtCheckpoint.has(stream),
    );
    result.endings.push({ stream, last: last.event, lastIndex: last.index, replayed });
  }
  result.problems.sort((a, b) => a.index - b.index);
  return result;
}

/**
 * The state and context one node machine had at `until` (an ISO time), rebuilt from its recorded
 * transitions up to then (e.g. `node/node1/memory`, the HA cycle's memory); null before its first one.
 */
export function replayedMachineAt(events: RecordedEvent[], stream: string, until: string): ReplayedMachine | null {
  const entries = events
    .map((event, index) => ({ event, index }))
    .filter(
      ({ event }) =>
        event.stream === stream && event.type.endsWith(TRANSITION_SUFFIX) && Date.parse(event.at) <= Date.parse(until),
    )
    .sort((a, b) => a.event.seq - b.event.seq);
  if (entries.length === 0) return null;
  const replayed = replayStream(entries, () => undefined, false);
  return replayed.state === null ? null : replayed;
}

export interface ReplayedMachine {
  state: string | null;
  context: unknown;
}

/** Replays one stream; returns the state the machine ends in (null when it could not be replayed) and its context. */
function replayStream(
  entries: { event: RecordedEvent; index: number }[],
  report: (entry: { event: RecordedEvent; index: number }, message: string) => void,
  startsMidway: boolean,
): ReplayedMachine {
  const machineName = entries[0].event.type.slice(0, -TRANSITION_SUFFIX.length);
  const machine = MACHINES[machineName];
  if (!machine) {
    report(entries[0], `no machine named ${machineName} to replay it`);
    return { state: null, context: null };
  }
  const logic = withoutSideEffects(machine);
  let actor: AnyActorRef | null = null;
  // The previous event was reported already: the state it leaves is not worth a second report.
  let diverged = false;
  for (const entry of entries) {
    const { event } = entry;
    if (event.from === null) {
      if (event.cause !== INIT_EVENT)
        report(entry, `starts the ${machineName} machine (from null) by ${event.cause}, not ${INIT_EVENT}`);
      actor?.stop();
      actor = startActor(logic, null);
      const initial = stateOf(actor);
      diverged = initial !== event.to;
      if (diverged)
        report(entry, `illegal transition: a new ${machineName} machine starts in ${initial}, recorded ${event.to}`);
      continue;
    }
    if (!actor || stateOf(actor) !== event.from) {
      const firstAfterCheckpoint = startsMidway && actor === null && entry === entries[0];
      if (!diverged && !firstAfterCheckpoint) {
        report(
          entry,
          actor
            ? `illegal transition: recorded from ${event.from}, but the machine is in ${stateOf(actor)} (an event missing before it?)`
            : `illegal transition: recorded from ${event.from}, but no ${INIT_EVENT} started the machine before it`,
        );
      }
      const context = actor?.getSnapshot().context;
      actor?.stop();
      actor = resumeAt(logic, event.from, context);
      if (!actor) {
        report(entry, `${event.from} is not a state of the ${machineName} machine`);
        diverged = true;
        continue;
      }
    }
    actor.send(machineEventOf(event));
    const snapshot = actor.getSnapshot();
    if (snapshot.status === 'error') {
      report(entry, `${event.cause} in ${event.from} made the ${machineName} machine fail: ${String(snapshot.error)}`);
      diverged = true;
      actor = null;
      continue;
    }
    const reached = stateOf(actor);
    diverged = reached !== event.to;
    if (diverged)
      report(entry, `illegal transition: ${event.cause} in ${event.from} leads to ${reached}, recorded ${event.to}`);
  }
  const ending = actor
    ? { state: stateOf(actor), context: actor.getSnapshot().context as unknown }
    : { state: null, context: null };
  actor?.stop();
  return ending;
}

/** The machine with every invoked actor replaced by one that never settles: nothing runs, the log supplies the outcomes. */
function withoutSideEffects(machine: AnyStateMachine): AnyStateMachine {
  const neverSettles = fromPromise(() => new Promise<never>(() => undefined));
  const actors = Object.fromEntries(Object.keys(machine.implementations.actors).map((id) => [id, neverSettles]));
  return machine.provide({ actors });
}

/** Started actor, fresh (`snapshot` null) or restored; errors are read from its snapshot, not thrown. */
function startActor(logic: AnyStateMachine, snapshot: ReturnType<AnyStateMachine['resolveState']> | null): AnyActorRef {
  const actor = createActor(logic, snapshot ? { snapshot } : {});
  // Without an error listener XState rethrows a failing machine's error asynchronously.
  actor.subscribe({ error: () => undefined });
  actor.start();
  return actor;
}

/** An actor in the recorded state `state`, keeping `context` (e.g. the pause flag) when given; null when there is no such state. */
function resumeAt(logic: AnyStateMachine, state: string, context: unknown): AnyActorRef | null {
  try {
    const resolved = logic.resolveState({
      value: toStateValue(state),
      context: context ?? createActor(logic).getSnapshot().context,
    });
    return stateValueToString(resolved.value) === state ? startActor(logic, resolved) : null;
  } catch {
    return null;
  }
}

function stateOf(actor: AnyActorRef): string {
  return stateValueToString(actor.getSnapshot().value as StateValue);
}

/** `running.promoting` → `{running: 'promoting'}`, the inverse of stateValueToString for non-parallel machines. */
function toStateValue(state: string): StateValue {
  const [head, ...rest] = state.split('.');
  return rest.length === 0 ? head : { [head]: toStateValue(rest.join('.')) };
}

/** The machine event as recorded (`data.event`), or just its type. */
function machineEventOf(event: RecordedEvent): { type: string } {
  const recorded = event.data?.event as { type?: unknown } | undefined;
  return recorded && typeof recorded.type === 'string' ? (recorded as { type: string }) : { type: event.cause };
}
