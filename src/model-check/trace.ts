import { writeFileSync } from 'node:fs';
import { RecordedEvent } from '../events/event';
import { Action, Bounds, DecisionMutation } from './model-types';
import { ClusterModel, LOOP_WAIT_S, NODE_NAMES, ReplicationMode } from './model';
import { FoundViolation, steadyStart } from './search';
import { EPOCH, postgresStateName } from './snapshot';
import { ModelEvent } from './recording';
import { checkedStep } from './step';

/**
 * A counter-example as the event store records it: the start (each node's machines from null),
 * then every step's events in order, each step announced by a `model.step` event on the
 * `model-check` stream, the violation last. Time advances loop_wait at each tick and a millisecond
 * per event otherwise, so `stator audit replay --at` can show the cluster after any step.
 */
export function counterExampleEvents(
  mode: ReplicationMode,
  bounds: Bounds,
  violation: FoundViolation,
  mutation?: DecisionMutation,
): RecordedEvent[] {
  const seqs = new Map<string, number>();
  const out: RecordedEvent[] = [];
  let clock = EPOCH;
  const record = (event: ModelEvent) => {
    clock++;
    const seq = (seqs.get(event.stream) ?? 0) + 1;
    seqs.set(event.stream, seq);
    out.push({ ...event, seq, at: new Date(clock).toISOString() });
  };
  let c: ClusterModel = steadyStart(mode, bounds, mutation);
  startEvents(c).forEach(record);
  violation.path.forEach((action: Action, index) => {
    if (action.kind === 'tick')
      clock = Math.ceil((clock + 1 - EPOCH) / (LOOP_WAIT_S * 1000)) * LOOP_WAIT_S * 1000 + EPOCH;
    record({
      stream: 'model-check',
      type: 'model.step',
      node: action.node >= 0 ? NODE_NAMES[action.node] : 'cluster',
      from: null,
      to: null,
      cause: action.label,
      data: { step: index + 1, action: action.label },
    });
    const step = checkedStep(c, action, bounds, mutation);
    step.events.forEach(record);
    c = step.next;
  });
  record({
    stream: 'model-check',
    type: 'model.violation',
    node: 'cluster',
    from: null,
    to: null,
    cause: violation.invariant,
    data: { invariant: violation.invariant, message: violation.message, steps: violation.path.length },
  });
  return out;
}

function startEvents(c: ClusterModel): ModelEvent[] {
  return c.nodes.flatMap((n, i) => {
    const node = NODE_NAMES[i];
    const start = (machine: string, to: string): ModelEvent => ({
      stream: `node/${node}/${machine}`,
      type: `${machine}.transition`,
      node,
      from: null,
      to,
      cause: 'xstate.init',
      data: {},
    });
    return [
      start('postgres', postgresStateName(n)),
      start('role', n.role),
      start('leadership', n.leader ? 'leader' : 'follower'),
    ];
  });
}

/** Writes the events as JSON lines, the format of `stator audit export` and `--file`. */
export function writeCounterExample(path: string, events: RecordedEvent[]): void {
  writeFileSync(path, events.map((e) => JSON.stringify(e)).join('\n') + '\n');
}
