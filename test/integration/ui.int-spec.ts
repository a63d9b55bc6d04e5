import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Browser, Page } from 'playwright-core';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { launchChromium } from '../../src/statecharts/chromium';

/**
 * The cluster page (`/ui`) of a real 3-node cluster in headless chromium: the members table and
 * each node's statecharts, then a switchover seen live on the old leader's page. Agents run from
 * `dist/`: run `npm run build` first.
 */
jest.setTimeout(180_000);

const SCREENSHOT = join(__dirname, '..', '..', 'test-artifacts', 'ui-switchover.png');

let cluster: LocalCluster;
let baseDir: string;
let browser: Browser;

beforeAll(async () => {
  baseDir = tmpDir('stator-ui-');
  [cluster, browser] = await Promise.all([LocalCluster.start({ nodes: 3, baseDir, ttl: 10, loopWait: 2, retryTimeout: 4 }), launchChromium()]);
  const leader = await cluster.waitForLeader(60_000);
  await cluster.waitForStreaming(cluster.nodes.filter((node) => node !== leader).map((node) => node.name), 60_000);
});

afterAll(async () => {
  await browser?.close();
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

/** The little of the DOM that `shown` reads in the page (this project compiles without the DOM library). */
interface PageElement {
  dataset: Record<string, string | undefined>;
  textContent: string | null;
  querySelector(selector: string): PageElement | null;
}
declare const document: {
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): Iterable<PageElement> & { length: number };
};

/** What the page shows, read in the browser: members' roles, the leader, and the highlighted state of each role chart. */
interface Shown {
  roles: Record<string, string>;
  leader: string;
  roleCharts: Record<string, string | null>;
  events: number;
}

function shown(page: Page): Promise<Shown> {
  return page.evaluate(() => {
    const rows = [...document.querySelectorAll('[data-testid="member-row"]')];
    const charts = [...document.querySelectorAll('figure[data-machine="role"]')];
    return {
      roles: Object.fromEntries(rows.map((row) => [row.dataset.name!, row.dataset.role!])),
      leader: document.querySelector('[data-testid="leader-name"]')!.textContent!,
      roleCharts: Object.fromEntries(
        charts.map((figure) => [figure.dataset.testid!.replace(/^chart-|-role$/g, ''), figure.querySelector('g.current')?.textContent?.trim() ?? null]),
      ),
      events: document.querySelectorAll('[data-testid="event-row"]').length,
    };
  });
}

/**
 * Polls the page until every named expectation holds, for at most `timeoutMs`; answers when (ms
 * after the start) each first held. Fails with the page's last state and the ones still missing.
 */
async function waitUntilShown(page: Page, timeoutMs: number, expectations: Record<string, (now: Shown) => boolean>): Promise<Record<string, number>> {
  const start = performance.now();
  const heldAt: Record<string, number> = {};
  for (;;) {
    const now = await shown(page);
    for (const [name, holds] of Object.entries(expectations)) {
      if (!(name in heldAt) && holds(now)) heldAt[name] = Math.round(performance.now() - start);
    }
    const missing = Object.keys(expectations).filter((name) => !(name in heldAt));
    if (missing.length === 0) return heldAt;
    if (performance.now() - start > timeoutMs) throw new Error(`after ${timeoutMs} ms the page shows ${JSON.stringify(now)}; not yet: ${missing.join(', ')}`);
    await page.waitForTimeout(25);
  }
}

describe('GET /ui', () => {
  it('serves the page, its assets and the diagrams from memory, and nothing else under /ui', async () => {
    const node = cluster.nodes[0];
    const get = async (path: string) => {
      const response = await fetch(node.apiUrl + path);
      return { status: response.status, type: response.headers.get('content-type'), csp: response.headers.get('content-security-policy'), body: await response.text() };
    };

    const page = await get('/ui');
    expect(page).toMatchObject({ status: 200, type: 'text/html; charset=utf-8' });
    expect(page.csp).toContain("default-src 'self'");
    expect(await get('/ui/assets/ui.js')).toMatchObject({ status: 200, type: 'text/javascript; charset=utf-8' });
    expect(await get('/ui/assets/ui.css')).toMatchObject({ status: 200, type: 'text/css; charset=utf-8' });
    const svg = await get('/ui/statecharts/role.svg');
    expect(svg).toMatchObject({ status: 200, type: 'image/svg+xml; charset=utf-8' });
    expect(svg.body).toContain('id="statechart-role-state-primary"');
    for (const path of ['/ui/assets/index.html', '/ui/assets/..%2F..%2Fpackage.json', '/ui/statecharts/role.json', '/ui/statecharts/nothing.svg']) {
      expect({ path, status: (await get(path)).status }).toEqual({ path, status: 404 });
    }
  });

  it('shows the members and their statecharts, and a switchover live on the old leader\'s page', async () => {
    const leader = await cluster.waitForLeader(30_000);
    const [candidate, other] = cluster.nodes.filter((node) => node !== leader) as [LocalNode, LocalNode];
    const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('console', (message) => message.type() === 'error' && pageErrors.push(message.text()));

    const response = await page.goto(`${leader.apiUrl}/ui`);
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-type']).toBe('text/html; charset=utf-8');

    await waitUntilShown(page, 10_000, {
      members: (now) =>
        now.leader === leader.name &&
        Object.keys(now.roles).length === 3 &&
        now.roles[leader.name] === 'leader' &&
        now.roles[candidate.name] === 'replica' &&
        now.roles[other.name] === 'replica',
      'role charts': (now) => now.roleCharts[leader.name] === 'primary' && now.roleCharts[candidate.name] === 'replica' && now.roleCharts[other.name] === 'replica',
      timeline: (now) => now.events > 0,
    });

    const requested = performance.now();
    const answer = await fetch(`${leader.apiUrl}/switchover`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ leader: leader.name, candidate: candidate.name }),
      signal: AbortSignal.timeout(60_000),
    });
    expect({ status: answer.status, text: await answer.text() }).toEqual({ status: 200, text: `Successfully switched over to "${candidate.name}"` });
    const answered = performance.now();

    const shownAfter = await waitUntilShown(page, 2000, {
      [`${candidate.name} leads`]: (now) => now.leader === candidate.name && now.roles[candidate.name] === 'leader',
      [`${candidate.name} primary`]: (now) => now.roleCharts[candidate.name] === 'primary',
      [`${leader.name} not primary`]: (now) => now.roleCharts[leader.name] !== null && now.roleCharts[leader.name] !== 'primary',
    });
    const milestones = Object.entries(shownAfter).map(([name, ms]) => `${name} +${ms} ms`);
    process.stdout.write(`switchover ${leader.name} → ${candidate.name} answered after ${Math.round(answered - requested)} ms; then on the page: ${milestones.join(', ')}\n`);

    mkdirSync(join(SCREENSHOT, '..'), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(pageErrors).toEqual([]);
    await page.close();
  });
});
