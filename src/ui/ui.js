'use strict';
/*
 * Stator's cluster page, served by every node at /ui. Plain browser JavaScript, no framework and
 * nothing from another origin. Sources:
 * - GET /cluster, every second: the members table and the leader;
 * - GET /schedule, every few seconds: the scheduled operations ("none" when there are none or the
 *   node does not serve them);
 * - GET /events/stream (Server-Sent Events): every new event, for the statecharts and the timeline;
 *   after each (re)connection, GET /events fills in what happened before.
 * The statecharts are the committed SVGs (/ui/statecharts/<machine>.svg), inlined once per node.
 */

const MACHINES = ['leadership', 'role', 'task', 'postgres'];
/** Drawing units per CSS pixel in the centred view: Mermaid's 16px labels read at about 11px. */
const CHART_SCALE = 0.7;
const CLUSTER_POLL_MS = 1000;
const SCHEDULE_POLL_MS = 3000;
const RECONNECT_DELAY_MS = 1000;
/** Events kept in the page; the oldest are dropped beyond it. */
const MAX_EVENTS = 5000;
const TIMELINE_ROWS = 300;

const $ = (testId) => document.querySelector(`[data-testid="${testId}"]`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function element(tag, properties = {}, children = []) {
  const node = Object.assign(document.createElement(tag), properties);
  for (const child of children) node.append(child);
  return node;
}

/** GET as JSON; a failure carries the node's explanation (`message` of its JSON error). */
async function getJson(path) {
  const response = await fetch(path, { headers: { accept: 'application/json' }, cache: 'no-store' });
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const error = new Error(`${path}: ${response.status} ${body?.message ?? response.statusText}`);
    error.status = response.status;
    throw error;
  }
  return body;
}

function showStatus(testId, text, problem) {
  const target = $(testId);
  target.textContent = text;
  target.classList.toggle('problem', Boolean(problem));
}

/* ---------- statecharts ---------- */

/** SVG text by machine, fetched once. */
const diagrams = {};
let chartCount = 0;

/**
 * One machine's diagram for one node. The SVG's ids all start with `statechart-<machine>` (see
 * src/statecharts/render-svg.ts); each copy gets its own prefix so ids stay unique in the page. A
 * state's box has the id `<prefix>-state-<path with "." as "__">`, e.g. `running.idle` →
 * `…-state-running__idle`: that is how the current state, and each compound state around it,
 * is found and given the class `current`.
 */
class Chart {
  constructor(nodeName, machine) {
    this.prefix = `c${chartCount++}-statechart-${machine}`;
    this.seq = 0;
    /** The box of the current (innermost) state, which the centred view centres on. */
    this.currentBox = null;
    this.whole = false;
    this.stateLabel = element('span', { className: 'state', textContent: '–' });
    const caption = element('figcaption', {}, [element('span', { className: 'machine', textContent: `${machine}: ` }), this.stateLabel]);
    this.frame = element('div', { className: 'frame' });
    this.figure = element('figure', { className: 'chart', title: 'click to see all of the diagram, or to centre it again' }, [caption, this.frame]);
    this.figure.dataset.testid = `chart-${nodeName}-${machine}`;
    this.figure.dataset.machine = machine;
    this.figure.addEventListener('click', () => {
      this.whole = !this.whole;
      this.figure.classList.toggle('whole', this.whole);
      this.fitToCurrentState();
    });
    if (diagrams[machine]) {
      this.frame.innerHTML = diagrams[machine].split(`statechart-${machine}`).join(this.prefix);
      this.svg = this.frame.querySelector('svg');
      this.fullViewBox = this.svg.getAttribute('viewBox').split(/\s+/).map(Number);
    } else {
      this.frame.textContent = 'diagram not available';
      this.svg = null;
    }
  }

  /** Shows the state a transition led to, unless a later one of the same stream was shown already. */
  show(statePath, seq) {
    if (seq <= this.seq) return;
    this.seq = seq;
    this.figure.dataset.state = statePath;
    if (!this.svg) {
      this.stateLabel.textContent = statePath;
      return;
    }
    for (const highlighted of this.svg.querySelectorAll('.current')) highlighted.classList.remove('current');
    const keys = statePath.split('.');
    const found = keys.map((_, depth) => document.getElementById(`${this.prefix}-state-${keys.slice(0, depth + 1).join('__')}`));
    for (const box of found) box?.classList.add('current');
    this.currentBox = found[found.length - 1] ?? null;
    this.stateLabel.textContent = found.every(Boolean) ? statePath : `${statePath} (not in the diagram)`;
    this.fitToCurrentState();
  }

  /** Either all of the diagram across the page, or a legible window centred on the current state. */
  fitToCurrentState() {
    if (!this.svg) return;
    const [fullX, fullY, fullWidth, fullHeight] = this.fullViewBox;
    if (this.whole) {
      this.svg.setAttribute('viewBox', this.fullViewBox.join(' '));
      this.svg.setAttribute('width', '100%');
      this.svg.removeAttribute('height');
      this.svg.style.maxWidth = `${fullWidth}px`;
      return;
    }
    const frameWidth = this.frame.clientWidth;
    const frameHeight = this.frame.clientHeight;
    if (frameWidth === 0) return;
    const width = frameWidth / CHART_SCALE;
    const height = frameHeight / CHART_SCALE;
    let centreX = fullX + fullWidth / 2;
    let centreY = fullY + fullHeight / 2;
    if (this.currentBox) {
      const box = boxInDrawing(this.svg, this.currentBox);
      centreX = box.x + box.width / 2;
      centreY = box.y + box.height / 2;
    }
    const x = width >= fullWidth ? fullX - (width - fullWidth) / 2 : clamp(centreX - width / 2, fullX, fullX + fullWidth - width);
    const y = height >= fullHeight ? fullY - (height - fullHeight) / 2 : clamp(centreY - height / 2, fullY, fullY + fullHeight - height);
    this.svg.setAttribute('viewBox', `${x} ${y} ${width} ${height}`);
    this.svg.setAttribute('width', String(frameWidth));
    this.svg.setAttribute('height', String(frameHeight));
    this.svg.style.maxWidth = 'none';
  }
}

function clamp(value, low, high) {
  return Math.min(Math.max(value, low), high);
}

/** An element's bounding box in the drawing's own coordinates (those of the viewBox), whatever transforms lie between. */
function boxInDrawing(svg, target) {
  const box = target.getBBox();
  const toDrawing = svg.getScreenCTM().inverse().multiply(target.getScreenCTM());
  const corners = [
    new DOMPoint(box.x, box.y).matrixTransform(toDrawing),
    new DOMPoint(box.x + box.width, box.y + box.height).matrixTransform(toDrawing),
  ];
  return { x: corners[0].x, y: corners[0].y, width: corners[1].x - corners[0].x, height: corners[1].y - corners[0].y };
}

/** name → { section, badge, charts: { machine → Chart } }, in the page in name order. */
const nodes = new Map();

function ensureNode(name) {
  let node = nodes.get(name);
  if (node) return node;
  const badge = element('span', { className: 'badge' });
  const charts = Object.fromEntries(MACHINES.map((machine) => [machine, new Chart(name, machine)]));
  const section = element('section', { className: 'node-charts' }, [
    element('h3', {}, [name, badge]),
    element('div', { className: 'charts' }, MACHINES.map((machine) => charts[machine].figure)),
  ]);
  section.dataset.testid = `charts-${name}`;
  node = { section, badge, charts };
  nodes.set(name, node);
  const container = $('statecharts');
  const following = [...nodes.keys()].sort().find((other) => other > name);
  container.insertBefore(section, following ? nodes.get(following).section : null);
  for (const chart of Object.values(charts)) chart.fitToCurrentState();
  void loadCurrentStates(name);
  return node;
}

/** The last transition of each of a node's machines: the timeline's window may not reach back to it. */
async function loadCurrentStates(name) {
  await Promise.all(
    MACHINES.map(async (machine) => {
      try {
        const [last] = await getJson(`/events?stream=${encodeURIComponent(`node/${name}/${machine}`)}&limit=1`);
        if (last) receive(last);
      } catch {
        // The feed's status line tells about an unreachable log; the next resync tries again.
      }
    }),
  );
}

/* ---------- events ---------- */

/** Every event received, oldest first by `at` (compared as instants: nodes may write different offsets). */
const events = [];
const seen = new Set();
const eventKey = (event) => `${event.stream}#${event.seq}`;
const NODE_STREAM = new RegExp(`^node/(.+)/(${MACHINES.join('|')})$`);

function receive(event) {
  const key = eventKey(event);
  if (seen.has(key)) return;
  seen.add(key);
  insertInTimeOrder(event);
  if (events.length > MAX_EVENTS) seen.delete(eventKey(events.shift()));
  const transition = NODE_STREAM.exec(event.stream);
  if (transition && event.to) {
    ensureNode(transition[1]).charts[transition[2]].show(event.to, event.seq);
    // A change of leadership or role shows in the members table at once rather than at the next poll.
    if (transition[2] !== 'postgres') pollClusterNow();
  }
  scheduleTimeline();
}

function insertInTimeOrder(event) {
  const time = Date.parse(event.at);
  let index = events.length;
  while (index > 0 && Date.parse(events[index - 1].at) > time) index--;
  events.splice(index, 0, event);
}

/** Reads the Server-Sent Events of /events/stream for as long as the page is open, reconnecting after a break. */
async function followEvents() {
  for (;;) {
    try {
      const response = await fetch('/events/stream', { headers: { accept: 'text/event-stream' }, cache: 'no-store' });
      if (!response.ok) {
        const body = await response.json().catch(() => null);
        throw new Error(`${response.status} ${body?.message ?? response.statusText}`);
      }
      showStatus('feed-status', 'live');
      // The stream only carries what happens from now on; what happened before (or during a break) comes from /events.
      void resync();
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const data = dataOf(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          if (data) receive(JSON.parse(data));
        }
      }
      showStatus('feed-status', 'reconnecting (the stream ended)', true);
    } catch (error) {
      showStatus('feed-status', `reconnecting (${error.message})`, true);
    }
    await sleep(RECONNECT_DELAY_MS);
  }
}

/** The `data:` lines of one SSE message, joined; comments (the heartbeat) have none. */
function dataOf(message) {
  return message
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(5).replace(/^ /, ''))
    .join('\n');
}

async function resync() {
  try {
    for (const event of await getJson('/events?limit=1000')) receive(event);
    await Promise.all([...nodes.keys()].map(loadCurrentStates));
  } catch (error) {
    showStatus('feed-status', `live, but the history could not be read (${error.message})`, true);
  }
}

/* ---------- timeline ---------- */

let timelinePending = false;
function scheduleTimeline() {
  if (timelinePending) return;
  timelinePending = true;
  requestAnimationFrame(() => {
    timelinePending = false;
    renderTimeline();
  });
}

const FILTERS = ['node', 'stream', 'type'];

function renderTimeline() {
  const form = $('timeline-filters');
  for (const field of FILTERS) updateOptions(form.elements[field], events.map((event) => event[field]));
  const wanted = Object.fromEntries(FILTERS.map((field) => [field, form.elements[field].value]));
  const matching = events.filter((event) => FILTERS.every((field) => wanted[field] === '' || event[field] === wanted[field]));
  const rows = matching.slice(-TIMELINE_ROWS).reverse().map((event) => {
    const row = element('tr', {}, [
      element('td', { className: 'number', textContent: clockTime(event.at), title: event.at }),
      element('td', { textContent: event.node }),
      element('td', { textContent: `${event.stream} #${event.seq}` }),
      element('td', { textContent: event.type }),
      element('td', { className: 'what', textContent: whatHappened(event) }),
      element('td', { className: 'cause', textContent: event.cause }),
    ]);
    row.dataset.testid = 'event-row';
    return row;
  });
  $('timeline').tBodies[0].replaceChildren(...rows);
  const shown = rows.length < matching.length ? `the latest ${rows.length} of ${matching.length}` : `${matching.length}`;
  $('timeline-count').textContent = `${shown} events`;
}

/** A transition as `from → to`; another event by its verdict, or its data in brief. */
function whatHappened(event) {
  if (event.to !== null) return `${event.from ?? '∅'} → ${event.to}`;
  if (typeof event.data?.verdict === 'string') return event.data.verdict;
  const data = event.data ? JSON.stringify(event.data) : '';
  return data.length > 160 ? `${data.slice(0, 159)}…` : data;
}

/** Adds the values seen since the last rendering to a filter's choices (its selection stays). */
function updateOptions(select, values) {
  const known = new Set([...select.options].map((option) => option.value));
  for (const value of [...new Set(values)].sort()) {
    if (!known.has(value)) select.add(new Option(value, value));
  }
}

/** `2024-05-01T12:00:01.234Z` → `14:00:01.234` in the browser's time zone. */
function clockTime(iso) {
  const time = new Date(iso);
  if (Number.isNaN(time.getTime())) return iso;
  const two = (n) => String(n).padStart(2, '0');
  return `${two(time.getHours())}:${two(time.getMinutes())}:${two(time.getSeconds())}.${String(time.getMilliseconds()).padStart(3, '0')}`;
}

/* ---------- members and schedule ---------- */

/** Cuts the wait before the next /cluster read short. */
let pollClusterNow = () => {};

async function pollCluster() {
  for (;;) {
    try {
      renderCluster(await getJson('/cluster'));
      showStatus('cluster-status', 'current');
    } catch (error) {
      showStatus('cluster-status', error.message, true);
    }
    await new Promise((resolve) => {
      pollClusterNow = resolve;
      setTimeout(resolve, CLUSTER_POLL_MS);
    });
  }
}

function renderCluster(cluster) {
  $('scope').textContent = cluster.scope ?? '';
  const members = cluster.members ?? [];
  const leader = members.find((member) => member.role === 'leader' || member.role === 'standby_leader');
  $('leader-name').textContent = (leader ? leader.name : 'none') + (cluster.pause ? ' (paused)' : '');
  const rows = members.map((member) => {
    const isLeader = member === leader;
    const row = element('tr', { className: isLeader ? 'leader' : '' }, [
      element('td', { textContent: member.name }),
      element('td', { textContent: member.role }),
      element('td', { textContent: member.state }),
      element('td', { className: 'number', textContent: isLeader ? '' : formatLag(member.lag) }),
      element('td', { className: 'number', textContent: member.timeline ?? '' }),
    ]);
    Object.assign(row.dataset, { testid: 'member-row', name: member.name, role: member.role });
    const node = ensureNode(member.name);
    node.badge.textContent = member.role;
    node.badge.classList.toggle('leader', isLeader);
    return row;
  });
  $('members').tBodies[0].replaceChildren(...rows);
}

function formatLag(lag) {
  if (typeof lag !== 'number') return lag ?? '';
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let value = lag;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

async function pollSchedule() {
  for (;;) {
    try {
      renderSchedule(await getJson('/schedule'));
    } catch (error) {
      // A node without the endpoint has nothing scheduled to show.
      if (error.status === 404) renderSchedule([]);
      else showScheduleProblem(error.message);
    }
    await sleep(SCHEDULE_POLL_MS);
  }
}

function renderSchedule(operations) {
  const target = $('schedule');
  if (!Array.isArray(operations) || operations.length === 0) {
    target.replaceChildren('none');
    return;
  }
  const columns = ['kind', 'node', 'candidate', 'at', 'fate', 'reason'];
  const rows = [...operations].reverse().map((operation) => {
    const row = element('tr', {}, columns.map((column) => element('td', { textContent: operation[column] ?? '' })));
    row.dataset.testid = 'schedule-row';
    return row;
  });
  const head = element('tr', {}, columns.map((column) => element('th', { textContent: column })));
  target.replaceChildren(element('table', {}, [element('thead', {}, [head]), element('tbody', {}, rows)]));
}

function showScheduleProblem(message) {
  const target = $('schedule');
  target.replaceChildren(element('span', { className: 'problem', textContent: message }));
}

/* ---------- start ---------- */

async function start() {
  $('timeline-filters').addEventListener('change', renderTimeline);
  window.addEventListener('resize', () => {
    for (const node of nodes.values()) for (const chart of Object.values(node.charts)) chart.fitToCurrentState();
  });
  await Promise.all(
    MACHINES.map(async (machine) => {
      const response = await fetch(`/ui/statecharts/${machine}.svg`);
      diagrams[machine] = response.ok ? await response.text() : null;
    }),
  );
  void pollCluster();
  void pollSchedule();
  void followEvents();
}

void start();
