import { LaidOutLabel, LaidOutState, LaidOutTransition, STYLE, StatechartLayout } from './elk-layout';
import { DIAGRAM_FONT } from './text-metrics';
import { svgRootId } from './chromium';

/** Colours of the committed drawing; the page (src/ui/ui.css) restyles the current state and the last transition. */
const INK = '#1f2933';
const MUTED = '#616e7c';
const EDGE = '#7b8794';
const STATE_FILL = '#ffffff';
const COMPOUND_FILL = '#f0f4f8';
const LAST = '#c2410c';

const escapeXml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const attributes = (pairs: Record<string, string | number | undefined>) =>
  Object.entries(pairs)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}="${escapeXml(String(value))}"`)
    .join(' ');

/** The `id` of a transition's arrow in a machine's SVG; its label carries the same `data-transition`. */
export function transitionElementId(machine: string, transitionId: string): string {
  return `${svgRootId(machine)}-transition-${transitionId}`;
}

function drawState(machine: string, state: LaidOutState): string {
  const { x, y, width, height } = state;
  if (state.kind === 'initial') {
    return `<circle class="initial" ${attributes({ cx: x + width / 2, cy: y + height / 2, r: width / 2, fill: INK })}/>`;
  }
  const id = state.kind === 'any' ? `${svgRootId(machine)}-any-state` : `${svgRootId(machine)}-state-${state.id}`;
  const group = attributes({ id, class: `state ${state.kind}`, 'data-path': state.path });
  if (state.kind === 'compound') {
    return [
      `<g ${group}>`,
      `<rect ${attributes({ x, y, width, height, rx: 10, fill: COMPOUND_FILL, stroke: MUTED, 'stroke-width': 1.5 })}/>`,
      `<line ${attributes({ x1: x, y1: y + STYLE.compoundTitle, x2: x + width, y2: y + STYLE.compoundTitle, stroke: MUTED, 'stroke-width': 1 })}/>`,
      `<text ${attributes({ x: x + 12, y: y + 19, 'font-size': STYLE.stateFont, 'font-weight': 'bold', fill: INK })}>${escapeXml(state.label)}</text>`,
      '</g>',
    ].join('');
  }
  const dashed = state.kind === 'any' ? { 'stroke-dasharray': '4 3' } : {};
  const lines = [
    `<g ${group}>`,
    `<rect ${attributes({ x, y, width, height, rx: 6, fill: STATE_FILL, stroke: INK, 'stroke-width': 1.5, ...dashed })}/>`,
    `<text ${attributes({ x: x + width / 2, y: y + 20, 'text-anchor': 'middle', 'font-size': STYLE.stateFont, 'font-weight': state.kind === 'any' ? 'normal' : 'bold', fill: INK })}>${escapeXml(state.label)}</text>`,
  ];
  state.invokes.forEach((invoke, index) => {
    const baseline = y + STYLE.stateHeight + 8 + index * STYLE.invokeLineHeight;
    lines.push(`<text ${attributes({ class: 'invoke', x: x + width / 2, y: baseline, 'text-anchor': 'middle', 'font-size': STYLE.invokeFont, fill: MUTED })}>invoke ${escapeXml(invoke)}</text>`);
  });
  lines.push('</g>');
  return lines.join('');
}

function drawArrow(machine: string, transition: LaidOutTransition): string {
  const d = transition.points.map(([x, y], index) => `${index === 0 ? 'M' : 'L'}${x} ${y}`).join(' ');
  const identity = transition.events.length > 0 ? { id: transitionElementId(machine, transition.id), 'data-transition': transition.id, 'data-source': transition.source, 'data-target': transition.target, 'data-events': transition.events.join(' ') } : {};
  return `<path ${attributes({ ...identity, class: 'transition', d, fill: 'none', stroke: EDGE, 'stroke-width': 1.3, 'marker-end': `url(#${svgRootId(machine)}-arrow)` })}/>`;
}

function drawLabel(transition: LaidOutTransition, label: LaidOutLabel): string {
  const texts = label.lines.map((line, index) => {
    const baseline = label.y + 1 + (index + 1) * STYLE.labelLineHeight - 3.5;
    // `data-event`: the page emphasises the line of the event that fired.
    return `<text ${attributes({ 'data-event': transition.events[index], x: label.x + label.width / 2, y: baseline, 'text-anchor': 'middle', 'font-size': STYLE.labelFont, fill: INK })}>${escapeXml(line)}</text>`;
  });
  return [
    `<g ${attributes({ class: 'transition-label', 'data-transition': transition.id })}>`,
    `<rect ${attributes({ x: label.x, y: label.y, width: label.width, height: label.height, rx: 3, fill: '#ffffff', 'fill-opacity': 0.9 })}/>`,
    ...texts,
    '</g>',
  ].join('');
}

/**
 * The SVG of a laid-out statechart, deterministic (same layout, same bytes). Every element is
 * addressable the way the page needs: a state's group by `stateElementId` (with `data-path`), a
 * transition's arrow by `transitionElementId` (with `data-events`, the machine events it stands
 * for) and its label by the same `data-transition`. Painted in order: containers, arrows, states,
 * labels, so no arrow hides a state or a label.
 */
export function layoutToSvg(layout: StatechartLayout): string {
  const machine = layout.machine;
  const root = attributes({
    xmlns: 'http://www.w3.org/2000/svg',
    id: svgRootId(machine),
    class: 'statechart',
    'data-machine': machine,
    viewBox: `0 0 ${layout.width} ${layout.height}`,
    width: layout.width,
    height: layout.height,
    'font-family': DIAGRAM_FONT,
  });
  const head = (suffix: string, colour: string, size: number) =>
    `<marker ${attributes({ id: `${svgRootId(machine)}-${suffix}`, viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: size, markerHeight: size, orient: 'auto-start-reverse', markerUnits: 'userSpaceOnUse' })}><path d="M0 0 L10 5 L0 10 z" fill="${colour}"/></marker>`;
  // The second head is for the arrow of the last transition, which the page draws in colour.
  const arrowHeads = head('arrow', EDGE, 7) + head('arrow-last', LAST, 11);
  const compounds = layout.states.filter((state) => state.kind === 'compound');
  const others = layout.states.filter((state) => state.kind !== 'compound');
  return [
    `<svg ${root}>`,
    `<title>${escapeXml(machine)} statechart</title>`,
    `<defs>${arrowHeads}</defs>`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    ...compounds.map((state) => drawState(machine, state)),
    ...layout.transitions.map((transition) => drawArrow(machine, transition)),
    ...others.map((state) => drawState(machine, state)),
    ...layout.transitions.flatMap((transition) => (transition.label ? [drawLabel(transition, transition.label)] : [])),
    '</svg>',
    '',
  ].join('\n');
}
