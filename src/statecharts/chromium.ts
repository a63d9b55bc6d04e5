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
 * The `id` of a state's group in a machine's SVG: the state's path joined by `__` under the root
 * id. `running.idle` → `statechart-postgres-state-running__idle`. The UI (src/ui/ui.js) finds the
 * states to highlight by this id.
 */
export function stateElementId(machine: string, statePath: string): string {
  return `${svgRootId(machine)}-state-${statePath.split('.').join('__')}`;
}
