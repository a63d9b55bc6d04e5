'use strict';
/*
 * Stator's cluster page, served by every node at /ui. Plain browser JavaScript, no framework and
 * nothing from another origin. Sources:
 * - GET /events (every page, once) and GET /events/stream (Server-Sent Events, live): the event
 *   log, from which the statecharts, the swim lanes, the event table and (in time travel) the
 *   members and the schedule are folded (time-travel.js);
 * - GET /cluster, every second, and GET /schedule, every few seconds: the members (with lag) and
 *   the scheduled operations as they are now, shown in live mode.
 */

const CLUSTER_POLL_MS = 1000;
const SCHEDULE_POLL_MS = 3000;
const RECONNECT_DELAY_MS = 1000;
const TIMELINE_ROWS = 300;

/** What /cluster and /schedule said last (live mode shows them). */
const now = { cluster: null, schedule: [] };
/** Transitions received from the feed since the last rendering: their arrows are animated. */
const justHappened = new Set();

let renderPending = false;
function scheduleRender() {
  if (renderPending) return;
  renderPending = true;
  requestAnimationFrame(() => {
    renderPending = false;
    render();
  });
}

/** Draws the page for the shown instant: live (travel.instant null) or a past one. */
function render() {
  const instant = travel.instant;
  const folded = typeof StatorReplay === 'undefined' ? null : clusterAtInstant(instant);
  const last = lastTransitionsAt(instant);
  renderCharts(folded?.projections.cluster ?? null, last);
  if (instant === null || !folded) {
    renderLiveMembers();
    renderSchedule(now.schedule);
  } else {
    renderMembersAt(folded.projections.cluster);
    renderSchedule(folded.projections.schedule);
  }
  $('fold-count').textContent = folded ? `${folded.events} of ${travel.log.length} events folded` : '';
  renderTimeline(instant);
  justHappened.clear();
}

/** Every node's charts: the state the fold gives for each machine, the last transition that led there. */
function renderCharts(cluster, last) {
  const names = new Set([
    ...Object.keys(cluster?.members ?? {}),
    ...(now.cluster?.members ?? []).map((member) => member.name),
  ]);
  for (const event of last.values()) names.add(machineTransition(event).node);
  for (const name of names) {
    const view = nodeView(name);
    for (const machine of MACHINES) {
      const event = last.get(`${name}/${machine}`) ?? null;
      const state = cluster?.members[name]?.machines?.[machine] ?? event?.to ?? null;
      // Only live mode animates: a past instant shows its last transitions still.
      view.charts[machine].show(
        state,
        event,
        travel.instant === null && event !== null && justHappened.has(eventKey(event)),
      );
    }
  }
}

/* ---------- members ---------- */

function tableHead(columns) {
  $('members').tHead.replaceChildren(
    element(
      'tr',
      {},
      columns.map((column) => element('th', { textContent: column })),
    ),
  );
}

function memberRow(name, role, state, cells, leads) {
  const row = element('tr', { className: leads ? 'leader' : '' }, [
    element('td', { textContent: name }),
    ...cells.map(([text, className]) => element('td', { textContent: text ?? '', className: className ?? '' })),
  ]);
  Object.assign(row.dataset, { testid: 'member-row', name, role: role ?? '', state: state ?? '' });
  return row;
}

function renderLiveMembers() {
  const cluster = now.cluster;
  $('members-source').textContent = 'now, from /cluster';
  tableHead(['name', 'role', 'state', 'lag', 'timeline']);
  if (!cluster) return;
  $('scope').textContent = cluster.scope ?? '';
  const members = cluster.members ?? [];
  const leader = members.find((member) => member.role === 'leader' || member.role === 'standby_leader');
  $('leader-name').textContent = (leader ? leader.name : 'none') + (cluster.pause ? ' (paused)' : '');
  const rows = members.map((member) => {
    const leads = member === leader;
    showBadge(member.name, member.role, leads);
    return memberRow(
      member.name,
      member.role,
      member.state,
      [[member.role], [member.state], [leads ? '' : formatLag(member.lag), 'number'], [member.timeline, 'number']],
      leads,
    );
  });
  $('members').tBodies[0].replaceChildren(...rows);
}

/** The members as the log tells them at the instant: the role, leadership and postgres machines' states. */
function renderMembersAt(cluster) {
  $('members-source').textContent =
    `at ${clockTime(new Date(travel.instant).toISOString())}, folded from the event log`;
  tableHead(['name', 'leadership', 'role', 'postgres', 'timeline']);
  $('leader-name').textContent = (cluster.leader ?? 'none') + (cluster.paused ? ' (paused)' : '');
  const rows = Object.entries(cluster.members)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, member]) => {
      const leads = cluster.leader === name;
      showBadge(name, member.role, leads);
      return memberRow(
        name,
        member.role,
        member.machines?.postgres ?? member.state,
        [
          [member.leadership],
          [member.role],
          [member.machines?.postgres ?? member.state],
          [member.timeline ?? '', 'number'],
        ],
        leads,
      );
    });
  $('members').tBodies[0].replaceChildren(...rows);
}

/** Cuts the wait before the next /cluster read short. */
let pollClusterNow = () => {};

async function pollCluster() {
  for (;;) {
    try {
      now.cluster = (await getJson('/cluster')).body;
      showStatus('cluster-status', 'current');
      if (travel.instant === null) renderLiveMembers();
    } catch (error) {
      showStatus('cluster-status', error.message, true);
    }
    await new Promise((resolve) => {
      pollClusterNow = resolve;
      setTimeout(resolve, CLUSTER_POLL_MS);
    });
  }
}

/* ---------- schedule ---------- */

async function pollSchedule() {
  for (;;) {
    try {
      now.schedule = (await getJson('/schedule')).body;
      if (travel.instant === null) renderSchedule(now.schedule);
    } catch (error) {
      // A node without the endpoint has nothing scheduled to show.
      if (error.status === 404) now.schedule = [];
      else $('schedule').replaceChildren(element('span', { className: 'problem', textContent: error.message }));
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
    const row = element(
      'tr',
      {},
      columns.map((column) => element('td', { textContent: operation[column] ?? '' })),
    );
    row.dataset.testid = 'schedule-row';
    return row;
  });
  const head = element(
    'tr',
    {},
    columns.map((column) => element('th', { textContent: column })),
  );
  target.replaceChildren(element('table', {}, [element('thead', {}, [head]), element('tbody', {}, rows)]));
}

/* ---------- the event table ---------- */

const FILTERS = ['node', 'stream', 'type'];

/** The latest events up to the shown instant, newest first, through the filters. */
function renderTimeline(instant) {
  const form = $('timeline-filters');
  for (const field of FILTERS)
    updateOptions(
      form.elements[field],
      travel.log.map((event) => event[field]),
    );
  const wanted = Object.fromEntries(FILTERS.map((field) => [field, form.elements[field].value]));
  const matching = travel.log
    .filter((event) => instant === null || timeOf(event) <= instant)
    .filter((event) => FILTERS.every((field) => wanted[field] === '' || event[field] === wanted[field]))
    .sort((a, b) => timeOf(a) - timeOf(b));
  const rows = matching
    .slice(-TIMELINE_ROWS)
    .reverse()
    .map((event) => {
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
  const shown =
    rows.length < matching.length ? `the latest ${rows.length} of ${matching.length}` : `${matching.length}`;
  $('timeline-count').textContent = `${shown} events${instant === null ? '' : ' up to the instant shown'}`;
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

/* ---------- the live feed ---------- */

function receive(events) {
  if (!addToLog(events)) return;
  for (const event of events) {
    const transition = machineTransition(event);
    if (!transition) continue;
    justHappened.add(eventKey(event));
    // A change of leadership or role shows in the members table at once rather than at the next poll.
    if (transition.machine !== 'postgres') pollClusterNow();
  }
  scheduleRender();
  scheduleTravelBar();
}

/** Reads the Server-Sent Events of /events/stream for as long as the page is open, reconnecting after a break. */
async function followEvents() {
  let connections = 0;
  for (;;) {
    try {
      const response = await fetch('/events/stream', { headers: { accept: 'text/event-stream' }, cache: 'no-store' });
      if (!response.ok) {
        const body = await response.json().catch(() => null);
        throw new Error(`${response.status} ${body?.message ?? response.statusText}`);
      }
      showStatus('feed-status', 'live');
      // The stream only carries what happens from now on; what happened before (or during a break) comes from /events.
      void fillIn(connections++ === 0);
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
          if (data) receive([JSON.parse(data)]);
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

/** The whole log at the first connection; after a break, the latest page (what the break missed). */
async function fillIn(whole) {
  try {
    if (whole) {
      await loadWholeLog((count) => showStatus('feed-status', `live, reading the log (${count} events)`));
      showStatus('feed-status', 'live');
      document.body.dataset.logLoaded = 'true';
    } else {
      addToLog((await getJson('/events?limit=1000')).body);
    }
    scheduleRender();
    scheduleTravelBar();
  } catch (error) {
    showStatus('feed-status', `live, but the log could not be read (${error.message})`, true);
  }
}

/* ---------- start ---------- */

async function start() {
  $('timeline-filters').addEventListener('change', () => renderTimeline(travel.instant));
  // Hiding the large diagrams (postgres) puts every node's smaller ones on one screen.
  $('machine-toggles').addEventListener('change', (event) => {
    document.querySelector('section.statecharts').classList.toggle(`hide-${event.target.value}`, !event.target.checked);
  });
  travel.onChange = render;
  startTimeTravel();
  renderTravelBar();
  await loadDiagrams();
  void pollCluster();
  void pollSchedule();
  void followEvents();
}

void start();
