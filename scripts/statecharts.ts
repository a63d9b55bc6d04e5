import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { MACHINES, statechartFiles } from '../src/statecharts/machines';
import { CHROMIUM_PATH, chromiumAvailable, renderMermaidSvgs } from '../src/statecharts/render-svg';
import { toMermaid } from '../src/statecharts/to-mermaid';

/**
 * `npm run statecharts`: writes each machine's definition (JSON) and Mermaid diagram to
 * `statecharts/`, then draws each diagram as SVG in headless chromium (skipped without it).
 */
async function main(): Promise<void> {
  const target = resolve(__dirname, '..', '..', 'statecharts');
  mkdirSync(target, { recursive: true });
  const write = (file: string, content: string) => {
    writeFileSync(join(target, file), content);
    process.stdout.write(`statecharts/${file}\n`);
  };
  for (const [name, machine] of Object.entries(MACHINES)) {
    for (const [file, content] of Object.entries(statechartFiles(name, machine))) write(file, content);
  }
  if (!chromiumAvailable()) {
    process.stdout.write(`no chromium at ${CHROMIUM_PATH}: the SVG diagrams were not redrawn\n`);
    return;
  }
  const diagrams = Object.fromEntries(Object.entries(MACHINES).map(([name, machine]) => [name, toMermaid(machine)]));
  for (const [name, svg] of Object.entries(await renderMermaidSvgs(diagrams))) write(`${name}.svg`, svg);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
