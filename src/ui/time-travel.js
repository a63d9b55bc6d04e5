'use strict';
/*
 * The event log as the page holds it, and the time travel over it. Every state the page shows for
 * an instant (statecharts, roles, members, schedule) is folded by `StatorReplay.clusterAt`: the
 * function `stator audit replay --at` runs, bundled for the browser at build time
 * (scripts/build-ui.ts), over every event of the log in the order the node serves them, from
 * retention's checkpoint when there is one.
 */

/** Larger than any event's time: "everything up to now" for the fold. */
const LIVE = 8.64e15;
const LANE_MACHINES = ['leadership', 'role', 'postgres'];

const travel = {
  /** Every event of the log, in the node's order; new ones are appended as the feed brings them. */
  log: [],
  seen: new Set(),
  /** The node machine transitions of the log, in time order. */
  transitions: [],
  /** Where retention cut the log (GET /events/checkpoint), null when it never did: the fold starts from it. */
  checkpoint: null,
  /** The instant shown (epoch ms), or null in live mode. */
  instant: null,
  /** Called after the instant or the log changed: (instant|null) => void. */
  onChange: () => {},
};

const timeOf = (event) => Date.parse(event.at);

/** Adds events (new ones only); answers whether any was new. */
function addToLog(events) {
  let added = false;
  for (const event of events) {
    const key = eventKey(event);
    if (travel.seen.has(key)) continue;
    travel.seen.add(key);
    // The node's cache may still hold events the checkpoint's projections already count.
    if (
      typeof StatorReplay !== 'undefined' &&
      StatorReplay.coveredByCheckpoint(travel.checkpoint, event.stream, event.seq)
    )
      continue;
    travel.log.push(event);
    added = true;
    if (machineTransition(event)) insertTransition(event);
  }
  return added;
}

function insertTransition(event) {
  const time = timeOf(event);
  let index = travel.transitions.length;
  while (index > 0 && timeOf(travel.transitions[index - 1]) > time) index--;
  travel.transitions.splice(index, 0, event);
}

/**
 * Reads the whole log from `GET /events`, newest page first, following `Link: rel="next"` to
 * older pages; the pages are put back oldest first, before what the feed delivered meanwhile.
 */
async function loadWholeLog(onProgress) {
  try {
    travel.checkpoint = (await getJson('/events/checkpoint')).body.checkpoint;
  } catch (error) {
    // A node without the endpoint: fold from the first event it serves.
    if (error.status !== 404) throw error;
  }
  const pages = [];
  let path = '/events?limit=10000';
  while (path) {
    const { body, link } = await getJson(path);
    pages.unshift(body);
    onProgress(pages.reduce((sum, page) => sum + page.length, 0));
    const next = /<([^>]+)>;\s*rel="next"/.exec(link ?? '');
    path = next ? next[1] : null;
  }
  const arrivedMeanwhile = travel.log;
  travel.log = [];
  travel.seen.clear();
  travel.transitions = [];
  addToLog(pages.flat());
  addToLog(arrivedMeanwhile);
}

/** The cluster at `instant` (null: now), by the same fold as `stator audit replay --at`. */
function clusterAtInstant(instant) {
  return StatorReplay.clusterAt(travel.log, instant ?? LIVE, travel.checkpoint);
}

/**
 * The last transition of each node machine at or before `instant` that changed its state, by
 * `<node>/<machine>` (a targetless one, such as a context update, has no arrow to show).
 */
function lastTransitionsAt(instant) {
  const last = new Map();
  for (const event of travel.transitions) {
    if (instant !== null && timeOf(event) > instant) break;
    if (event.from === event.to) continue;
    const { node, machine } = machineTransition(event);
    last.set(`${node}/${machine}`, event);
  }
  return last;
}

function timeRange() {
  const times = travel.log.map(timeOf).filter((time) => !Number.isNaN(time));
  if (times.length === 0) return null;
  return { first: Math.min(...times), last: Math.max(...times) };
}

/** Moves to `instant` (null: back to live). */
function travelTo(instant) {
  travel.instant = instant;
  renderTravelBar();
  travel.onChange(instant);
}

/** The previous or next transition from the shown instant (or from now). */
function stepTransition(direction) {
  const here = travel.instant ?? LIVE;
  const times = travel.transitions.map(timeOf);
  const target = direction < 0 ? times.filter((time) => time < here).pop() : times.find((time) => time > here);
  if (target !== undefined) travelTo(target);
  else if (direction > 0) travelTo(null);
}

let laneFrame = false;
/** Redraws the bar (slider bounds, lanes, cursor) at the next frame. */
function scheduleTravelBar() {
  if (laneFrame) return;
  laneFrame = true;
  requestAnimationFrame(() => {
    laneFrame = false;
    renderTravelBar();
  });
}

function renderTravelBar() {
  const range = timeRange();
  const slider = $('time-slider');
  const live = travel.instant === null;
  document.body.classList.toggle('travelling', !live);
  const mode = $('mode');
  mode.textContent = live ? 'live' : 'time travel';
  mode.className = `mode ${live ? 'live' : 'past'}`;
  $('go-live').disabled = live;
  if (!range) return;
  slider.min = String(range.first);
  slider.max = String(range.last);
  const shown = live ? range.last : travel.instant;
  slider.value = String(shown);
  const instantText = live
    ? `now (log up to ${clockTime(new Date(range.last).toISOString())})`
    : `${clockTime(new Date(travel.instant).toISOString())}  ${new Date(travel.instant).toISOString()}`;
  $('instant').textContent = instantText;
  $('instant').dataset.instant = live ? '' : new Date(travel.instant).toISOString();
  const span = Math.max(range.last - range.first, 1);
  const position = (time) => `${(((time - range.first) / span) * 100).toFixed(3)}%`;
  $('lane-cursor').style.left = position(shown);
  renderLanes(range, position);
  renderAxis(range, span);
}

let lanesDrawn = '';
function renderLanes(range, position) {
  const nodes = [...new Set(travel.transitions.map((event) => machineTransition(event).node))].sort();
  const drawn = `${nodes.join(',')}|${travel.transitions.length}|${range.first}|${range.last}`;
  if (drawn === lanesDrawn) return;
  lanesDrawn = drawn;
  $('lane-names').replaceChildren(
    ...nodes.map((node) => element('div', { className: 'lane-name', textContent: node })),
  );
  const lanes = nodes.map((node) => {
    const lane = element('div', { className: 'lane' });
    lane.dataset.node = node;
    for (const machine of LANE_MACHINES) lane.append(element('div', { className: `track ${machine}` }));
    return lane;
  });
  const byNode = new Map(lanes.map((lane) => [lane.dataset.node, lane]));
  for (const event of travel.transitions) {
    const { node, machine } = machineTransition(event);
    const track = byNode.get(node)?.querySelector(`.track.${machine}`);
    if (!track) continue;
    const mark = element('button', {
      type: 'button',
      className: `mark ${machine}`,
      title: `${clockTime(event.at)} ${node} ${machine}: ${event.from ?? '∅'} → ${event.to} (${event.cause})`,
    });
    mark.style.left = position(timeOf(event));
    Object.assign(mark.dataset, { testid: 'lane-mark', at: event.at, node, machine, to: event.to });
    mark.addEventListener('click', () => travelTo(timeOf(event)));
    track.append(mark);
  }
  $('swim-lanes').replaceChildren($('lane-cursor'), ...lanes);
}

function renderAxis(range, span) {
  const ticks = 6;
  const labels = [];
  for (let index = 0; index <= ticks; index++) {
    const time = range.first + (span * index) / ticks;
    // Seconds are enough over a long log; tenths tell the ticks of a short one apart.
    const text = clockTime(new Date(time).toISOString());
    const label = element('span', { textContent: span > 60_000 ? text.slice(0, 8) : text.slice(0, 10) });
    label.style.left = `${(index / ticks) * 100}%`;
    labels.push(label);
  }
  $('lane-axis').replaceChildren(...labels);
}

function startTimeTravel() {
  const slider = $('time-slider');
  // Each move folds the log again at the slider's instant; at most once per frame.
  let pending = null;
  slider.addEventListener('input', () => {
    const wanted = Number(slider.value);
    if (pending === null) {
      requestAnimationFrame(() => {
        const instant = pending;
        pending = null;
        travelTo(instant >= Number(slider.max) && travel.instant === null ? null : instant);
      });
    }
    pending = wanted;
  });
  $('go-live').addEventListener('click', () => travelTo(null));
  $('previous-transition').addEventListener('click', () => stepTransition(-1));
  $('next-transition').addEventListener('click', () => stepTransition(1));
  if (typeof StatorReplay === 'undefined') {
    $('time-travel').classList.add('unavailable');
    $('instant').textContent =
      'time travel unavailable: this node serves no replay fold (build the agent with npm run build)';
  }
}
