import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { Browser, chromium } from 'playwright-core';

/** Debian's chromium; playwright-core drives it, so no browser is downloaded. */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/** Headless, offline, no sandbox (CI runs as root), nothing phoning home. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

export function chromiumAvailable(): boolean {
  return existsSync(CHROMIUM_PATH);
}

/** Headless chromium with a fresh, empty profile (playwright creates and removes it). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS });
}

/** The root `id` of a machine's SVG; every id inside the diagram starts with it. */
export function svgRootId(machine: string): string {
  return `statechart-${machine}`;
}

/**
 * The `id` of a state's box in a machine's SVG: the Mermaid id of `to-mermaid.ts` (the state's
 * path joined by `__`) under the root id. `running.idle` → `statechart-postgres-state-running__idle`.
 * The UI (src/ui/ui.js) finds the states to highlight by this id.
 */
export function stateElementId(machine: string, statePath: string): string {
  return `${svgRootId(machine)}-state-${statePath.split('.').join('__')}`;
}

/** The attribute carrying the hash of the `.mmd` an SVG was drawn from, so a stale SVG is found without a browser. */
export const SOURCE_HASH_ATTRIBUTE = 'data-source-sha256';

export function sourceHash(mermaidSource: string): string {
  return createHash('sha256').update(mermaidSource).digest('hex');
}

/** The page's `mermaid` global, loaded from mermaid's own bundle. */
declare const mermaid: {
  initialize(config: Record<string, unknown>): void;
  render(id: string, text: string): Promise<{ svg: string }>;
};

/**
 * Draws Mermaid diagrams as SVG in one headless chromium, offline (mermaid's bundle is loaded from
 * node_modules). Labels are SVG text rather than HTML in `foreignObject`, so the files display in
 * any SVG viewer. Returns each SVG normalized by `normalizeSvg`.
 */
export async function renderMermaidSvgs(diagrams: Record<string, string>): Promise<Record<string, string>> {
  const browser = await launchChromium();
  try {
    const page = await browser.newPage();
    await page.setContent('<!doctype html><html><body></body></html>');
    await page.addScriptTag({ path: require.resolve('mermaid/dist/mermaid.min.js') });
    const svgs: Record<string, string> = {};
    for (const [machine, source] of Object.entries(diagrams)) {
      const svg = await page.evaluate(
        async ({ id, text }) => {
          mermaid.initialize({ startOnLoad: false, securityLevel: 'strict', deterministicIds: true, deterministicIDSeed: id, htmlLabels: false, state: { htmlLabels: false } });
          return (await mermaid.render(id, text)).svg;
        },
        { id: svgRootId(machine), text: source },
      );
      svgs[machine] = normalizeSvg(svg, machine, source);
    }
    return svgs;
  } finally {
    await browser.close();
  }
}

/**
 * Makes a rendered SVG stable and addressable: Mermaid suffixes each state's id with a render
 * counter (`statechart-role-state-primary-14`), which is dropped so the id depends on the state
 * alone (see `stateElementId`); the hash of the source is recorded on the root element.
 */
export function normalizeSvg(svg: string, machine: string, source: string): string {
  const stateIdWithCounter = new RegExp(`(id="${svgRootId(machine)}-state-[^"]+?)-\\d+"`, 'g');
  const stable = svg.replace(stateIdWithCounter, '$1"');
  return stable.replace(/^<svg /, `<svg ${SOURCE_HASH_ATTRIBUTE}="${sourceHash(source)}" `) + '\n';
}
