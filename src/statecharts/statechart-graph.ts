import { AnyStateMachine, AnyStateNode } from 'xstate';
import { eventLabel } from './to-mermaid';

/** A state of a machine as the diagrams draw it. */
export interface ChartState {
  /** The state's path joined by `__` (`running.idle` → `running__idle`), unique in its machine. */
  id: string;
  /** The dotted path that transition events carry (`running.idle`). */
  path: string;
  key: string;
  /** The ids of the actors the state invokes (`startPostgres`). */
  invokes: string[];
  children: ChartState[];
  /** Compound states: the id of the child entered first. */
  initial: string | null;
}

/** Every transition between one pair of states, drawn as one edge with one label line per event. */
export interface ChartTransition {
  id: string;
  /** State ids; `ANY_STATE` for a transition of the machine itself, taken from any state. */
  source: string;
  target: string;
  /** The machine events, as transition events record them in `cause` (`xstate.done.actor.startPostgres`). */
  events: string[];
  /** What each event's line says: `done startPostgres`, `POSTMASTER_EXITED [isPaused]`. */
  labels: string[];
}

export interface ChartGraph {
  machine: string;
  states: ChartState[];
  /** The id of the top-level state entered first. */
  initial: string | null;
  transitions: ChartTransition[];
}

/** The source of a transition defined on the machine itself (it leaves whatever state is current). */
export const ANY_STATE = 'any-state';

/** The id of the initial pseudo-state (the dot) of a compound state, or of the machine (`parent` null). */
export function initialMarkerId(parent: string | null): string {
  return parent === null ? 'initial' : `${parent}--initial`;
}

function stateId(node: AnyStateNode): string {
  return node.path.join('__');
}

function guardSuffix(guard: unknown): string {
  if (!guard) return '';
  if (typeof guard === 'string') return ` [${guard}]`;
  const type = (guard as { type?: unknown }).type;
  return typeof type === 'string' ? ` [${type}]` : ' [guard]';
}

function initialChild(node: AnyStateNode): string | null {
  const key = node.initial?.target[0]?.key;
  const child = key === undefined ? undefined : (node.states[String(key)] as AnyStateNode | undefined);
  return child ? stateId(child) : null;
}

/**
 * The states and transitions of a machine, in the order of its code (so layouts are stable).
 * Transitions between the same two states are one edge: a pair like `done rewindData` and
 * `error rewindData` reads as one arrow with two lines rather than two arrows drawn on top of
 * each other.
 */
export function statechartGraph(name: string, machine: AnyStateMachine): ChartGraph {
  const byPair = new Map<string, ChartTransition>();
  const addTransitions = (node: AnyStateNode) => {
    const source = node.path.length === 0 ? ANY_STATE : stateId(node);
    for (const [eventType, transitions] of node.transitions) {
      for (const transition of transitions) {
        for (const targetNode of transition.target ?? []) {
          const target = stateId(targetNode as AnyStateNode);
          const pair = `${source}->${target}`;
          let edge = byPair.get(pair);
          if (!edge) {
            edge = { id: `t${byPair.size}`, source, target, events: [], labels: [] };
            byPair.set(pair, edge);
          }
          const label = `${eventLabel(eventType)}${guardSuffix(transition.guard)}`;
          if (!edge.labels.includes(label)) {
            edge.events.push(eventType);
            edge.labels.push(label);
          }
        }
      }
    }
  };
  const toState = (node: AnyStateNode): ChartState => {
    const children = (Object.values(node.states) as AnyStateNode[]).map(toState);
    return {
      id: stateId(node),
      path: node.path.join('.'),
      key: node.key,
      invokes: node.invoke.map((invoke) => invoke.id),
      children,
      initial: children.length > 0 ? initialChild(node) : null,
    };
  };
  const states = (Object.values(machine.root.states) as AnyStateNode[]).map(toState);
  const walk = (node: AnyStateNode) => {
    addTransitions(node);
    for (const child of Object.values(node.states) as AnyStateNode[]) walk(child);
  };
  for (const child of Object.values(machine.root.states) as AnyStateNode[]) walk(child);
  addTransitions(machine.root);
  return { machine: name, states, initial: initialChild(machine.root), transitions: [...byPair.values()] };
}
