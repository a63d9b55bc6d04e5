'use strict';
/*
 * One machine's diagram for one node: the committed SVG (/ui/statecharts/<machine>.svg, laid out
 * by ELK at `npm run statecharts`) inlined, scaled to the width of its box. The SVG names every
 * state's group `statechart-<machine>-state-<path with "." as "__">` and every arrow carries
 * `data-transition`, `data-source`, `data-target` (state ids) and `data-events` (the machine
 * events it stands for), see src/statecharts/layout-svg.ts: that is how the current state and
 * the last transition are found.
 */

/** Machines in the order their diagrams are laid out in a node's box (small ones first, postgres across the whole width). */
const MACHINES = ['leadership', 'task', 'role', 'postgres'];
/** Below this scale a diagram's 11px labels are too small to read: the box scrolls instead. */
const SMALLEST_SCALE = 0.62;
/** How long a transition that has just happened is animated. */
const FIRED_MS = 4000;

/** SVG text by machine, fetched once. */
const diagrams = {};
let chartCount = 0;

async function loadDiagrams() {
  await Promise.all(
    MACHINES.map(async (machine) => {
      const response = await fetch(`/ui/statecharts/${machine}.svg`);
      diagrams[machine] = response.ok ? await response.text() : null;
    }),
  );
}

/** `running.idle` → [`running`, `running__idle`]: the ids of a state and of every state around it, outermost first. */
function stateIds(path) {
  const keys = path.split('.');
  return keys.map((_, depth) => keys.slice(0, depth + 1).join('__'));
}

class Chart {
  constructor(nodeName, machine) {
    this.machine = machine;
    this.prefix = `c${chartCount++}-statechart-${machine}`;
    this.shownKey = null;
    this.stateLabel = element('span', { className: 'state', textContent: '–' });
    this.lastLabel = element('span', { className: 'last', textContent: '' });
    const caption = element('figcaption', {}, [
      element('span', { className: 'machine', textContent: `${machine}: ` }),
      this.stateLabel,
      this.lastLabel,
    ]);
    this.frame = element('div', { className: 'frame' });
    this.figure = element('figure', { className: `chart ${machine}` }, [caption, this.frame]);
    Object.assign(this.figure.dataset, { testid: `chart-${nodeName}-${machine}`, node: nodeName, machine });
    this.svg = null;
    if (diagrams[machine]) {
      // Ids stay unique in the page: each copy of a diagram gets its own prefix.
      this.frame.innerHTML = diagrams[machine].split(`statechart-${machine}`).join(this.prefix);
      this.svg = this.frame.querySelector('svg');
      const [, , width] = this.svg.getAttribute('viewBox').split(/\s+/).map(Number);
      // Fits the box: as wide as the box, never larger than drawn, never below a legible scale.
      this.svg.removeAttribute('width');
      this.svg.removeAttribute('height');
      Object.assign(this.svg.style, {
        width: '100%',
        height: 'auto',
        maxWidth: `${width}px`,
        minWidth: `${Math.round(width * SMALLEST_SCALE)}px`,
      });
      this.figure.style.setProperty('--natural-width', `${width}px`);
    } else {
      this.frame.textContent = 'diagram not available';
    }
  }

  /**
   * Highlights `statePath` and `last`, the transition that led there (null: none known), as
   * a past transition or, with `fresh`, as one happening now (animated for a few seconds).
   */
  show(statePath, last, fresh) {
    const key = `${statePath}|${last ? eventKey(last) : ''}`;
    if (key === this.shownKey && !fresh) return;
    this.shownKey = key;
    this.figure.dataset.state = statePath ?? '';
    this.stateLabel.textContent = statePath ?? '–';
    this.lastLabel.textContent = last
      ? `last: ${last.from ?? '∅'} → ${last.to} on ${last.cause} at ${clockTime(last.at)}`
      : '';
    if (!this.svg) return;
    for (const highlighted of this.svg.querySelectorAll('.current, .last, .fired, .cause')) {
      highlighted.classList.remove('current', 'last', 'fired', 'cause');
      highlighted.style.removeProperty('marker-end');
    }
    if (statePath) {
      const boxes = stateIds(statePath).map((id) => this.svg.querySelector(`[id="${this.prefix}-state-${id}"]`));
      for (const box of boxes) box?.classList.add('current');
      if (!boxes.every(Boolean)) this.stateLabel.textContent = `${statePath} (not in the diagram)`;
    }
    const arrow = last ? this.arrowOf(last) : null;
    this.figure.dataset.lastTransition = arrow ? arrow.dataset.transition : '';
    if (!arrow) return;
    for (const part of this.svg.querySelectorAll(`[data-transition="${arrow.dataset.transition}"]`)) {
      part.classList.add('last');
      if (part === arrow) part.style.setProperty('marker-end', `url(#${this.prefix}-arrow-last)`);
      // Of a label's lines (one per event), the event that fired.
      for (const line of part.querySelectorAll('text[data-event]'))
        line.classList.toggle('cause', line.dataset.event === last.cause);
      if (fresh) part.classList.add('fired');
    }
    if (fresh)
      setTimeout(
        () =>
          arrow.isConnected && this.svg.querySelectorAll('.fired').forEach((part) => part.classList.remove('fired')),
        FIRED_MS,
      );
  }

  /**
   * The arrow a recorded transition took: one that stands for its event, leaves its `from` state
   * or a state around it (or any state), and enters its `to` state or one around it. The
   * innermost source wins, as in the machine.
   */
  arrowOf(event) {
    if (!event.from) return null;
    const sources = [...stateIds(event.from).reverse(), 'any-state'];
    const targets = new Set(stateIds(event.to));
    const arrows = [...this.svg.querySelectorAll('path.transition[data-events]')].filter(
      (arrow) => arrow.dataset.events.split(' ').includes(event.cause) && targets.has(arrow.dataset.target),
    );
    for (const source of sources) {
      const found = arrows.find((arrow) => arrow.dataset.source === source);
      if (found) return found;
    }
    return null;
  }
}

/** name → { section, badge, charts: { machine → Chart } }, in the page in name order. */
const nodeViews = new Map();

function nodeView(name) {
  let view = nodeViews.get(name);
  if (view) return view;
  const badge = element('span', { className: 'badge' });
  const charts = Object.fromEntries(MACHINES.map((machine) => [machine, new Chart(name, machine)]));
  const section = element('section', { className: 'node-charts' }, [
    element('h3', {}, [name, badge]),
    element(
      'div',
      { className: 'charts' },
      MACHINES.map((machine) => charts[machine].figure),
    ),
  ]);
  section.dataset.testid = `charts-${name}`;
  view = { section, badge, charts };
  nodeViews.set(name, view);
  const container = $('statecharts');
  const following = [...nodeViews.keys()].sort().find((other) => other > name);
  container.insertBefore(section, following ? nodeViews.get(following).section : null);
  return view;
}

/** Sets a node's badge: its role, in the leader's colour when it leads. */
function showBadge(name, role, leads) {
  const { badge } = nodeView(name);
  badge.textContent = role ?? '';
  badge.classList.toggle('leader', Boolean(leads));
}
