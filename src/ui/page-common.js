'use strict';
/* Helpers shared by the page's scripts (plain browser JavaScript, loaded in order, no modules). */

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
  return { body, link: response.headers.get('link') };
}

function showStatus(testId, text, problem) {
  const target = $(testId);
  target.textContent = text;
  target.classList.toggle('problem', Boolean(problem));
}

/** `2024-05-01T12:00:01.234Z` → `14:00:01.234` in the browser's time zone. */
function clockTime(iso) {
  const time = new Date(iso);
  if (Number.isNaN(time.getTime())) return String(iso);
  const two = (n) => String(n).padStart(2, '0');
  return `${two(time.getHours())}:${two(time.getMinutes())}:${two(time.getSeconds())}.${String(time.getMilliseconds()).padStart(3, '0')}`;
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

/** Node machine streams are `node/<name>/<machine>`. */
const NODE_MACHINE_STREAM = /^node\/(.+)\/([^/]+)$/;
const eventKey = (event) => `${event.stream}#${event.seq}`;

/** A machine transition of a node: `{ node, machine }`, or null for any other event. */
function machineTransition(event) {
  if (!event.type.endsWith('.transition') || event.to === null) return null;
  const match = NODE_MACHINE_STREAM.exec(event.stream);
  return match ? { node: match[1], machine: match[2] } : null;
}
