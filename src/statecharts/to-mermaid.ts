import { AnyStateMachine, AnyStateNode } from 'xstate';

/** A Mermaid id for a state node: `postgres.running.idle` → `running__idle`. */
function nodeId(node: AnyStateNode): string {
  return node.path.length === 0 ? node.machine.id : node.path.join('__');
}

/** `xstate.done.actor.startPostgres` → `done startPostgres`, so diagrams read like the code. */
export function eventLabel(eventType: string): string {
  const actor = /^xstate\.(done|error)\.actor\.(.+)$/.exec(eventType);
  if (actor) return `${actor[1]} ${actor[2]}`;
  const after = /^xstate\.after\.([^.]+)\./.exec(eventType);
  if (after) return `after ${after[1]}`;
  return eventType;
}

function guardLabel(guard: unknown): string {
  if (!guard) return '';
  if (typeof guard === 'string') return ` [${guard}]`;
  const type = (guard as { type?: unknown }).type;
  return typeof type === 'string' ? ` [${type}]` : ' [guard]';
}

/**
 * A `stateDiagram-v2` of a machine: compound states nest, invokes are noted on their state, every
 * transition is an edge labelled with its event (and guard). Deterministic, so a stale committed
 * diagram shows up as a diff.
 */
export function toMermaid(machine: AnyStateMachine): string {
  const lines = ['stateDiagram-v2'];
  const edges: string[] = [];

  const walk = (node: AnyStateNode, indent: string) => {
    const children = Object.values(node.states) as AnyStateNode[];
    if (node.initial && children.length > 0) {
      const initial = node.states[String(node.initial.target[0]?.key ?? '')];
      if (initial) lines.push(`${indent}[*] --> ${nodeId(initial)}`);
    }
    for (const child of children) {
      const id = nodeId(child);
      const grandchildren = Object.keys(child.states);
      if (grandchildren.length > 0) {
        lines.push(`${indent}state "${child.key}" as ${id} {`);
        walk(child, `${indent}  `);
        lines.push(`${indent}}`);
      } else {
        lines.push(`${indent}state "${child.key}" as ${id}`);
      }
      for (const invoke of child.invoke) lines.push(`${indent}${id} : invoke ${invoke.id}`);
      collectEdges(child);
    }
  };

  const collectEdges = (node: AnyStateNode) => {
    for (const [eventType, transitions] of node.transitions) {
      for (const transition of transitions) {
        for (const target of transition.target ?? []) {
          edges.push(`  ${nodeId(node)} --> ${nodeId(target)} : ${eventLabel(eventType)}${guardLabel(transition.guard)}`);
        }
      }
    }
  };

  walk(machine.root, '  ');
  collectEdges(machine.root);
  return [...lines, ...edges].join('\n') + '\n';
}
