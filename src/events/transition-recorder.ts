import { AnyMachineSnapshot, InspectionEvent, StateValue } from 'xstate';
import { Clock } from '../common/clock';
import { eventTime } from '../common/recorded-event';
import { NewEvent } from './event';

/** Anything that takes events for the log (the EventRecorder, or an array in tests). */
export interface EventSink {
  record(event: NewEvent): unknown;
}

/** `{running: 'promoting'}` → `running.promoting`. */
export function stateValueToString(value: StateValue): string {
  if (typeof value === 'string') return value;
  return Object.entries(value)
    .map(([key, child]) => (child === undefined ? key : `${key}.${stateValueToString(child as StateValue)}`))
    .join(',');
}

/** The top-level state of a machine, e.g. `running` for `running.promoting`. */
export function topLevelState(value: StateValue): string {
  return typeof value === 'string' ? value : Object.keys(value)[0];
}

/** JSON-safe copy of a machine event: errors become their message, so the log can be replayed. */
export function serializeMachineEvent(event: { type: string; [key: string]: unknown }): Record<string, unknown> {
  return JSON.parse(
    JSON.stringify(event, (_key, value) => (value instanceof Error ? { message: value.message } : value)),
  ) as Record<string, unknown>;
}

/** Events that change a machine's context without changing its state, recorded so a replay reproduces guards. */
const CONTEXT_EVENTS = new Set(['SET_PAUSE', 'TASK_STARTED', 'UPSTREAM_CHANGED', 'STOP_ESCALATED']);

/** How a machine whose events change only its context is recorded (the HA cycle's memory). */
export interface TransitionRecording {
  /** Events recorded even without a state change (default: the pause, task, upstream and stop escalation events). */
  contextEvents?: ReadonlySet<string>;
  /** The event as the log keeps it (default: as sent): bounds what a big payload puts in the log. */
  recordedEvent?: (event: { type: string; [key: string]: unknown }) => { type: string; [key: string]: unknown };
}

/**
 * Builds the `inspect` option of `createActor` that records every state change of the root actor
 * as `<machine>.transition` on the stream `node/<node>/<machine>`. The recorded `cause` is the
 * machine event type and `data.event` its payload, which is what a replay feeds back.
 */
export function transitionRecorder(
  machine: string,
  node: string,
  sink: EventSink,
  clock: Clock,
  options: TransitionRecording = {},
) {
  const record = snapshotRecorder(machine, node, sink, clock, options);
  return (inspection: InspectionEvent) => {
    if (inspection.actorRef.sessionId === inspection.rootId) record(inspection);
  };
}

/**
 * The `inspect` option of an actor system's root (the node's, node-system.ts): records the state changes
 * of the actors registered under the given systemIds, each as `transitionRecorder` records a root actor.
 * Other actors of the system (the root itself, the actions the machines invoke) are not recorded.
 */
export function systemTransitionRecorder(
  node: string,
  sink: EventSink,
  clock: Clock,
  machines: Record<string, TransitionRecording & { machine: string }>,
) {
  const bySystemId = new Map(
    Object.entries(machines).map(([systemId, { machine, ...options }]) => [
      systemId,
      snapshotRecorder(machine, node, sink, clock, options),
    ]),
  );
  return (inspection: InspectionEvent) => {
    const systemId = (inspection.actorRef as { systemId?: string }).systemId;
    if (systemId !== undefined) bySystemId.get(systemId)?.(inspection);
  };
}

/** Records one actor's snapshots that change its state (or carry a context event) as `<machine>.transition`. */
function snapshotRecorder(machine: string, node: string, sink: EventSink, clock: Clock, options: TransitionRecording) {
  const contextEvents = options.contextEvents ?? CONTEXT_EVENTS;
  const recorded = options.recordedEvent ?? ((event: { type: string; [key: string]: unknown }) => event);
  let previous: StateValue | undefined;
  return (inspection: InspectionEvent) => {
    if (inspection.type !== '@xstate.snapshot') return;
    const snapshot = inspection.snapshot as AnyMachineSnapshot;
    if (!('value' in snapshot)) return;
    const from = previous === undefined ? null : stateValueToString(previous);
    const to = stateValueToString(snapshot.value);
    previous = snapshot.value;
    // A state change, or an event that changes what later transitions do (pause) without one.
    if (from === to && !contextEvents.has(inspection.event.type)) return;
    sink.record({
      stream: `node/${node}/${machine}`,
      type: `${machine}.transition`,
      at: eventTime(clock.now()),
      node,
      from,
      to,
      cause: inspection.event.type,
      data: { event: serializeMachineEvent(recorded(inspection.event as { type: string })) },
    });
  };
}
