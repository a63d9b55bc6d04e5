import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * Part of `npm run build`: the fence is a Python program (src/postgresql/fence/fence_*.py), which tsc
 * does not copy; it goes beside the compiled agent, so that `dist/` runs on its own (the Docker image
 * ships `dist/` without `src/`).
 */
const ROOT = resolve(__dirname, '..', '..');
const FROM = join(ROOT, 'src', 'postgresql', 'fence');
const TO = join(ROOT, 'dist', 'src', 'postgresql', 'fence');

mkdirSync(TO, { recursive: true });
for (const file of readdirSync(FROM).filter((name) => name.endsWith('.py')))
  copyFileSync(join(FROM, file), join(TO, file));
