import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Browser, Page } from 'playwright-core';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { launchChromium } from '../../src/statecharts/chromium';

/**
 * The cluster page (`/ui`) of a real 3-node cluster in headless chromium: a switchover followed
 * live on the old leader's page (screenshots before, during and after), then an instant in the
 * middle of it picked with the time slider, where the page must highlight exactly the states that
 * `stator audit replay --at` gives for that instant. Agents and the CLI run from `dist/`: run
 * `npm run build` first.
 */
jest.setTimeout(120_000);

const REPO_ROOT = join(__dirname, '..', '..');
const ARTIFACTS = join(REPO_ROOT, 'test-artifacts');
const MACHINES = ['leadership', 'task', 'role', 'postgres'];

let cluster: LocalCluster;
let baseDir: string;
let browser: Browser;

beforeAll(async () => {
  baseDir = tmpDir('stator-ui-');
  [cluster, browser] = await Promise.all([
    LocalCluster.start({ nodes: 3, baseDir, ttl: 10, loopWait: 2, retryTimeout: 4 }),
    launchChromium(),
  ]);
  const leader = await cluster.waitForLeader(60_000);
  await cluster.waitForStreaming(
    cluster.nodes.filter((node) => node !== leader).map((node) => node.name),
    60_000,
  );
});

afterAll(async () => {
  await browser?.close();
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

/** The little of the DOM the page reads use (this project compiles without the DOM library). */
interface PageElement {
  dataset: Record<string, string | undefined>;
  textContent: string | null;
  querySelectorAll(selector: string): Iterable<PageElement>;
}
declare const document: {
  body: PageElement;
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): Iterable<PageElement> & { length: number };
};

/** What the page shows, read in the browser. */
interface Shown {
  mode: string;
  /** `data-instant` of the shown instant ('' when live). */
  instant: string;
  leader: string;
  /** Members table: name → role and state columns, as the page keeps them in `data-role` and `data-state`. */
  roles: Record<string, string>;
  memberStates: Record<string, string>;
  /** node → machine → the state the chart names (`data-state`). */
  states: Record<string, Record<string, string>>;
  /** node → machine → the innermost highlighted state box (its `data-path`). */
  highlighted: Record<string, Record<string, string | null>>;
  /** node → machine → the arrow drawn as the last transition, `source->target` (state ids). */
  lastArrows: Record<string, Record<string, string | null>>;
  events: number;
  logLoaded: boolean;
}

function shown(page: Page): Promise<Shown> {
  return page.evaluate(() => {
    const states: Record<string, Record<string, string>> = {};
    const highlighted: Record<string, Record<string, string | null>> = {};
    const lastArrows: Record<string, Record<string, string | null>> = {};
    for (const figure of document.querySelectorAll('figure.chart')) {
      const { node, machine, state } = figure.dataset as Record<string, string>;
      (states[node] ??= {})[machine] = state ?? '';
      const boxes = [...figure.querySelectorAll('g.state.current')].map((box) => box.dataset.path ?? '');
      (highlighted[node] ??= {})[machine] = boxes.sort((a, b) => b.length - a.length)[0] ?? null;
      const [arrow] = [...figure.querySelectorAll('path.transition.last')];
      (lastArrows[node] ??= {})[machine] = arrow ? `${arrow.dataset.source}->${arrow.dataset.target}` : null;
    }
    return {
      mode: document.querySelector('[data-testid="mode"]')!.textContent!,
      instant: document.querySelector('[data-testid="instant"]')!.dataset.instant ?? '',
      leader: document.querySelector('[data-testid="leader-name"]')!.textContent!,
      roles: Object.fromEntries(
        [...document.querySelectorAll('[data-testid="member-row"]')].map((row) => [
          row.dataset.name!,
          row.dataset.role!,
        ]),
      ),
      memberStates: Object.fromEntries(
        [...document.querySelectorAll('[data-testid="member-row"]')].map((row) => [
          row.dataset.name!,
          row.dataset.state!,
        ]),
      ),
      states,
      highlighted,
      lastArrows,
      events: document.querySelectorAll('[data-testid="event-row"]').length,
      logLoaded: document.body.dataset.logLoaded === 'true',
    };
  });
}

/** Polls the page until `holds`, for at most `timeoutMs`; fails with what the page showed last. */
async function waitUntilShown(
  page: Page,
  timeoutMs: number,
  what: string,
  holds: (now: Shown) => boolean,
): Promise<Shown> {
  const start = performance.now();
  for (;;) {
    const now = await shown(page);
    if (holds(now)) return now;
    if (performance.now() - start > timeoutMs)
      throw new Error(`after ${timeoutMs} ms, not yet ${what}; the page shows ${JSON.stringify(now)}`);
    await page.waitForTimeout(20);
  }
}

async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, name), fullPage: true });
}

/** `stator audit replay --at <instant> --json` over the cluster's stored log (the built CLI). */
function replayAt(instant: string): {
  leader: string | null;
  members: Record<string, { role?: string; machines?: Record<string, string> }>;
} {
  const run = spawnSync(
    process.execPath,
    [
      'bin/stator.js',
      'audit',
      'replay',
      '--etcd',
      cluster.etcd.endpoint,
      '--scope',
      cluster.scope,
      '--at',
      instant,
      '--json',
    ],
    {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 30_000,
    },
  );
  expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
  return JSON.parse(run.stdout);
}

describe('GET /ui', () => {
  it('serves the page, its scripts, the replay fold and the diagrams from memory, and nothing else under /ui', async () => {
    const node = cluster.nodes[0];
    const get = async (path: string) => {
      const response = await fetch(node.apiUrl + path);
      return {
        status: response.status,
        type: response.headers.get('content-type'),
        csp: response.headers.get('content-security-policy'),
        body: await response.text(),
      };
    };

    const page = await get('/ui');
    expect(page).toMatchObject({ status: 200, type: 'text/html; charset=utf-8' });
    expect(page.csp).toContain("default-src 'self'");
    for (const script of ['page-common.js', 'statechart-view.js', 'time-travel.js', 'ui.js', 'replay-fold.js']) {
      expect({ script, ...(await get(`/ui/assets/${script}`)), body: undefined, csp: undefined }).toMatchObject({
        script,
        status: 200,
        type: 'text/javascript; charset=utf-8',
      });
    }
    expect((await get('/ui/assets/replay-fold.js')).body).toContain('StatorReplay');
    expect(await get('/ui/assets/ui.css')).toMatchObject({ status: 200, type: 'text/css; charset=utf-8' });
    const svg = await get('/ui/statecharts/role.svg');
    expect(svg).toMatchObject({ status: 200, type: 'image/svg+xml; charset=utf-8' });
    expect(svg.body).toContain('id="statechart-role-state-primary"');
    for (const path of [
      '/ui/assets/index.html',
      '/ui/assets/..%2F..%2Fpackage.json',
      '/ui/statecharts/role.json',
      '/ui/statecharts/role.layout.json',
      '/ui/statecharts/nothing.svg',
    ]) {
      expect({ path, status: (await get(path)).status }).toEqual({ path, status: 404 });
    }
  });

  it('follows a switchover live, and shows an instant picked with the slider as stator audit replay --at tells it', async () => {
    const leader = await cluster.waitForLeader(30_000);
    const [candidate, other] = cluster.nodes.filter((node) => node !== leader) as [LocalNode, LocalNode];
    const page = await browser.newPage({ viewport: { width: 1800, height: 1100 } });
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => message.type() === 'error' && pageErrors.push(message.text()));
    expect((await page.goto(`${leader.apiUrl}/ui`))?.status()).toBe(200);

    // Before: live, every member in its role, each role chart highlighting it.
    const before = await waitUntilShown(
      page,
      15_000,
      'the cluster before the switchover',
      (now) =>
        now.logLoaded &&
        now.mode === 'live' &&
        now.leader === leader.name &&
        now.roles[leader.name] === 'leader' &&
        now.roles[candidate.name] === 'replica' &&
        now.roles[other.name] === 'replica' &&
        now.highlighted[leader.name]?.role === 'primary' &&
        now.highlighted[candidate.name]?.role === 'replica' &&
        now.highlighted[other.name]?.role === 'replica' &&
        now.highlighted[leader.name]?.leadership === 'leader' &&
        now.events > 0,
    );
    expect(before.highlighted[leader.name]?.postgres).toBe('running.idle');
    await screenshot(page, 'ui-before-switchover.png');

    // During: the page shows the old leader demoted while the candidate is not primary yet.
    const requested = performance.now();
    const answer = fetch(`${leader.apiUrl}/switchover`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ leader: leader.name, candidate: candidate.name }),
      signal: AbortSignal.timeout(60_000),
    });
    const during = await waitUntilShown(
      page,
      20_000,
      `${leader.name} demoted`,
      (now) => now.highlighted[leader.name]?.role === 'demoted',
    );
    const demotedShownAfter = Math.round(performance.now() - requested);
    expect(during.highlighted[candidate.name]?.role).not.toBe('primary');
    await screenshot(page, 'ui-during-switchover.png');
    const answered = await answer;
    expect({ status: answered.status, text: await answered.text() }).toEqual({
      status: 200,
      text: `Successfully switched over to "${candidate.name}"`,
    });

    // After: the candidate leads, in the table and in its charts; the old leader follows.
    const after = await waitUntilShown(
      page,
      20_000,
      `${candidate.name} leading and ${leader.name} a replica again`,
      (now) =>
        now.leader === candidate.name &&
        now.roles[candidate.name] === 'leader' &&
        now.highlighted[candidate.name]?.role === 'primary' &&
        now.highlighted[candidate.name]?.leadership === 'leader' &&
        now.highlighted[leader.name]?.leadership === 'follower' &&
        now.highlighted[leader.name]?.role === 'replica' &&
        now.highlighted[leader.name]?.postgres === 'running.idle' &&
        now.roles[leader.name] === 'replica' &&
        now.memberStates[leader.name] === 'streaming',
    );
    // The arrows of the transitions that led there, in colour.
    expect([
      after.lastArrows[candidate.name]?.role,
      after.lastArrows[leader.name]?.role,
      after.lastArrows[leader.name]?.leadership,
    ]).toEqual(['promoted->primary', 'demoted->replica', 'leader->follower']);
    process.stdout.write(
      `switchover ${leader.name} → ${candidate.name}: the page showed ${leader.name} demoted ${demotedShownAfter} ms after the request; after: ${JSON.stringify(after.highlighted)}\n`,
    );
    await screenshot(page, 'ui-after-switchover.png');

    // A past instant, picked with the slider: when the candidate's role machine was promoted.
    const roleEvents = (await (
      await fetch(`${candidate.apiUrl}/events?stream=node/${candidate.name}/role`)
    ).json()) as { to: string; at: string }[];
    const promoted = roleEvents.filter((event) => event.to === 'promoted').pop();
    expect(promoted).toBeDefined();
    const instant = Date.parse(promoted!.at);
    await page.locator('[data-testid="time-slider"]').fill(String(instant));
    const past = await waitUntilShown(
      page,
      5000,
      'the picked instant',
      (now) => now.mode === 'time travel' && now.instant === new Date(instant).toISOString(),
    );
    await screenshot(page, 'ui-past-instant.png');

    // The page folded the same log with the same function as the CLI: the same states everywhere.
    const replayed = replayAt(past.instant);
    const expected = Object.fromEntries(
      Object.entries(replayed.members).map(([name, member]) => [
        name,
        Object.fromEntries(MACHINES.map((machine) => [machine, member.machines?.[machine] ?? null])),
      ]),
    );
    expect(past.highlighted).toEqual(expected);
    expect(past.highlighted[candidate.name]?.role).toBe('promoted');
    expect(past.lastArrows[candidate.name]?.role).toBe('replica->promoted');
    expect(past.memberStates).toEqual(
      Object.fromEntries(
        Object.entries(replayed.members).map(([name, member]) => [name, member.machines?.postgres ?? '']),
      ),
    );
    expect(past.roles).toEqual(
      Object.fromEntries(Object.entries(replayed.members).map(([name, member]) => [name, member.role ?? ''])),
    );
    expect(past.leader).toBe(replayed.leader ?? 'none');

    // A mark of the swim lanes moves the slider to its transition: the candidate becoming primary.
    const becamePrimary = page
      .locator(`[data-testid="lane-mark"][data-node="${candidate.name}"][data-machine="role"][data-to="primary"]`)
      .last();
    const markedAt = await becamePrimary.getAttribute('data-at');
    // Dispatched on the mark itself: a neighbouring mark drawn over it must not take the click.
    await becamePrimary.dispatchEvent('click');
    const atMark = await waitUntilShown(
      page,
      5000,
      'the instant of the mark',
      (now) => now.instant === new Date(Date.parse(markedAt!)).toISOString(),
    );
    expect([atMark.highlighted[candidate.name]?.role, atMark.lastArrows[candidate.name]?.role]).toEqual([
      'primary',
      'promoted->primary',
    ]);

    // Back to live: the page follows the cluster as it is now again.
    await page.locator('[data-testid="go-live"]').click();
    await waitUntilShown(
      page,
      5000,
      'live again',
      (now) => now.mode === 'live' && now.highlighted[candidate.name]?.role === 'primary',
    );
    expect(pageErrors).toEqual([]);
    await page.close();
  });
});
