import type { ElkExtendedEdge, ElkNode } from 'elkjs/lib/elk-api';
import { ANY_STATE, ChartGraph, ChartState, initialMarkerId } from './statechart-graph';
import { textWidth } from './text-metrics';

/** Sizes of the drawing, in px at scale 1. */
export const STYLE = {
  stateFont: 14,
  invokeFont: 11,
  labelFont: 11,
  labelLineHeight: 14,
  statePadding: 10,
  stateHeight: 30,
  invokeLineHeight: 14,
  compoundTitle: 28,
  markerSize: 14,
  margin: 12,
} as const;

/** Where one state (or pseudo-state) lies, in the drawing's coordinates. */
export interface LaidOutState {
  id: string;
  /** `state`: a leaf; `compound`: a container of states; `initial`: the dot of an initial state; `any`: the source of transitions that leave any state. */
  kind: 'state' | 'compound' | 'initial' | 'any';
  /** The dotted path of a state (empty for pseudo-states). */
  path: string;
  label: string;
  invokes: string[];
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface LaidOutLabel {
  lines: string[];
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface LaidOutTransition {
  id: string;
  source: string;
  target: string;
  events: string[];
  /** The route: start, bends, end. */
  points: [number, number][];
  label: LaidOutLabel | null;
}

/** What `statecharts/<machine>.layout.json` holds: enough to draw the diagram without a layout engine. */
export interface StatechartLayout {
  machine: string;
  width: number;
  height: number;
  /** Containers before what they contain, so drawing in order paints children on top. */
  states: LaidOutState[];
  transitions: LaidOutTransition[];
}

const ROOT_OPTIONS: Record<string, string> = {
  'elk.algorithm': 'layered',
  'elk.direction': 'DOWN',
  'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
  'elk.edgeRouting': 'ORTHOGONAL',
  'elk.edgeLabels.placement': 'CENTER',
  'elk.edgeLabels.inline': 'false',
  // Cycles are broken in the order the code declares states, so the chart reads top-down as the
  // machine's story (stopped, initdb, ... running, ... crashed) and back edges return upwards.
  'elk.layered.cycleBreaking.strategy': 'MODEL_ORDER',
  // A label near where its arrow leaves: "this state, on this event".
  'elk.layered.edgeLabels.centerLabelPlacementStrategy': 'TAIL_LAYER',
  'elk.layered.nodePlacement.strategy': 'NETWORK_SIMPLEX',
  'elk.layered.spacing.nodeNodeBetweenLayers': '36',
  'elk.spacing.nodeNode': '28',
  'elk.spacing.edgeEdge': '12',
  'elk.spacing.edgeNode': '14',
  'elk.spacing.edgeLabel': '4',
  'elk.layered.spacing.edgeNodeBetweenLayers': '14',
  'elk.layered.spacing.edgeEdgeBetweenLayers': '10',
  'elk.padding': `[top=${STYLE.margin},left=${STYLE.margin},bottom=${STYLE.margin},right=${STYLE.margin}]`,
  'elk.randomSeed': '1',
  // Coordinates relative to the root, so the drawing needs no offsets of containers.
  'elk.json.shapeCoords': 'ROOT',
  'elk.json.edgeCoords': 'ROOT',
};

const COMPOUND_OPTIONS: Record<string, string> = {
  'elk.padding': `[top=${STYLE.compoundTitle + 8},left=14,bottom=14,right=14]`,
};

function leafSize(state: ChartState): { width: number; height: number } {
  const invokeLines = state.invokes.map((id) => `invoke ${id}`);
  const widest = Math.max(textWidth(state.key, STYLE.stateFont, 'bold'), ...invokeLines.map((line) => textWidth(line, STYLE.invokeFont)));
  return { width: Math.ceil(widest + 2 * STYLE.statePadding), height: STYLE.stateHeight + invokeLines.length * STYLE.invokeLineHeight };
}

function labelSize(lines: string[]): { width: number; height: number } {
  return { width: Math.ceil(Math.max(...lines.map((line) => textWidth(line, STYLE.labelFont))) + 4), height: lines.length * STYLE.labelLineHeight + 2 };
}

const marker = (id: string): ElkNode => ({ id, width: STYLE.markerSize, height: STYLE.markerSize });

/** The ELK graph of a statechart: compound states contain their children, each initial state gets a dot and an arrow. */
function toElk(graph: ChartGraph): ElkNode {
  const initialEdges: ElkExtendedEdge[] = [];
  const toNode = (state: ChartState): ElkNode => {
    if (state.children.length === 0) return { id: state.id, ...leafSize(state) };
    const children = state.children.map(toNode);
    if (state.initial) {
      children.unshift(marker(initialMarkerId(state.id)));
      initialEdges.push({ id: `${initialMarkerId(state.id)}-edge`, sources: [initialMarkerId(state.id)], targets: [state.initial] });
    }
    const titleWidth = textWidth(state.key, STYLE.stateFont, 'bold') + 40;
    return { id: state.id, layoutOptions: { ...COMPOUND_OPTIONS, 'elk.nodeSize.minimum': `(${Math.ceil(titleWidth)},60)`, 'elk.nodeSize.constraints': 'MINIMUM_SIZE' }, children };
  };
  const children = graph.states.map(toNode);
  if (graph.initial) {
    children.unshift(marker(initialMarkerId(null)));
    initialEdges.push({ id: 'initial-edge', sources: [initialMarkerId(null)], targets: [graph.initial] });
  }
  if (graph.transitions.some((transition) => transition.source === ANY_STATE)) {
    children.push({ id: ANY_STATE, width: Math.ceil(textWidth('any state', STYLE.stateFont) + 2 * STYLE.statePadding), height: STYLE.stateHeight });
  }
  const edges: ElkExtendedEdge[] = [
    ...initialEdges,
    ...graph.transitions.map((transition) => ({
      id: transition.id,
      sources: [transition.source],
      targets: [transition.target],
      labels: [{ id: `${transition.id}-label`, text: transition.labels.join('\n'), ...labelSize(transition.labels) }],
    })),
  ];
  return { id: graph.machine, layoutOptions: ROOT_OPTIONS, children, edges };
}

const round = (value: number) => Math.round(value * 10) / 10;

/** Lays a statechart out with ELK's layered algorithm. elkjs is loaded here only: the agent serves the committed result and never runs it. */
export async function layoutStatechart(graph: ChartGraph): Promise<StatechartLayout> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a devDependency, loaded only when a layout is computed
  const ELK = require('elkjs/lib/elk.bundled.js') as typeof import('elkjs/lib/elk.bundled.js').default;
  const laidOut = await new ELK().layout(toElk(graph));
  const byId = new Map<string, ChartState>();
  const index = (state: ChartState) => {
    byId.set(state.id, state);
    state.children.forEach(index);
  };
  graph.states.forEach(index);

  const states: LaidOutState[] = [];
  const visit = (node: ElkNode) => {
    for (const child of node.children ?? []) {
      const state = byId.get(child.id);
      const kind = state ? (state.children.length > 0 ? 'compound' : 'state') : child.id === ANY_STATE ? 'any' : 'initial';
      states.push({
        id: child.id,
        kind,
        path: state?.path ?? '',
        label: state?.key ?? (kind === 'any' ? 'any state' : ''),
        invokes: state?.invokes ?? [],
        x: round(child.x ?? 0),
        y: round(child.y ?? 0),
        width: round(child.width ?? 0),
        height: round(child.height ?? 0),
      });
      visit(child);
    }
  };
  visit(laidOut);

  const edges: ElkExtendedEdge[] = [];
  const collect = (node: ElkNode) => {
    edges.push(...(node.edges ?? []));
    (node.children ?? []).forEach(collect);
  };
  collect(laidOut);
  const eventsOf = new Map(graph.transitions.map((transition) => [transition.id, transition]));
  const transitions = edges.map((edge): LaidOutTransition => {
    const section = edge.sections?.[0];
    const points = section ? [section.startPoint, ...(section.bendPoints ?? []), section.endPoint].map((p): [number, number] => [round(p.x), round(p.y)]) : [];
    const label = edge.labels?.[0];
    const transition = eventsOf.get(edge.id);
    return {
      id: edge.id,
      source: edge.sources[0],
      target: edge.targets[0],
      events: transition?.events ?? [],
      points,
      label: label && transition ? { lines: transition.labels, x: round(label.x ?? 0), y: round(label.y ?? 0), width: round(label.width ?? 0), height: round(label.height ?? 0) } : null,
    };
  });
  return { machine: graph.machine, width: round(laidOut.width ?? 0), height: round(laidOut.height ?? 0), states, transitions };
}
