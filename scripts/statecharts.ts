import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { MACHINES, statechartFiles } from '../src/statecharts/machines';

/** `npm run statecharts`: writes each machine's definition (JSON) and Mermaid diagram to `statecharts/`. */
const target = resolve(__dirname, '..', '..', 'statecharts');
mkdirSync(target, { recursive: true });
for (const [name, machine] of Object.entries(MACHINES)) {
  for (const [file, content] of Object.entries(statechartFiles(name, machine))) {
    writeFileSync(join(target, file), content);
    process.stdout.write(`statecharts/${file}\n`);
  }
}
