import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { drawnStatechartFiles } from '../src/statecharts/drawn-statecharts';
import { MACHINES, statechartFiles } from '../src/statecharts/machines';

/**
 * `npm run statecharts`: writes each machine's definition (JSON), Mermaid text, ELK layout and
 * the SVG drawn from that layout to `statecharts/`. No browser is needed: label sizes come from
 * measured font metrics (src/statecharts/text-metrics.ts).
 */
async function main(): Promise<void> {
  const target = resolve(__dirname, '..', '..', 'statecharts');
  mkdirSync(target, { recursive: true });
  for (const [name, machine] of Object.entries(MACHINES)) {
    const files = { ...statechartFiles(name, machine), ...(await drawnStatechartFiles(name, machine)) };
    for (const [file, content] of Object.entries(files)) {
      writeFileSync(join(target, file), content);
      process.stdout.write(`statecharts/${file}\n`);
    }
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
