import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SearchReport } from './search';

/**
 * `--checkpoint DIR` and `--resume DIR` of `npm run model-check`: DIR/run.json holds the command's options,
 * DIR/<mode>/ the checkpoints of that mode's search (checkpoint.ts), DIR/<mode>/done.json its report once done.
 */

/** Starts a checkpointed run in `dir`: refused (the reason) when `dir` holds one already. */
export function startCheckpoints(dir: string, argv: string[]): string | null {
  const file = join(dir, 'run.json');
  if (existsSync(file)) return `${dir} holds a run already: --resume ${dir} goes on with it (or remove it)`;
  mkdirSync(dir, { recursive: true });
  writeFileSync(file, `${JSON.stringify({ argv }, null, 1)}\n`);
  return null;
}

/** The options of the run kept in `dir`, or why there is none. */
export function resumedArgv(dir: string): string[] | string {
  const file = join(dir, 'run.json');
  if (!existsSync(file)) return `${dir} holds no run (no run.json)`;
  const { argv } = JSON.parse(readFileSync(file, 'utf8')) as { argv: string[] };
  return argv;
}

/** One mode's search, checkpointed in dir/<mode>: its report when a run finished it before, else run (and kept). */
export function checkpointedSearch(dir: string, mode: string, run: (checkpoint: string) => SearchReport): SearchReport {
  const modeDir = join(dir, mode);
  const done = join(modeDir, 'done.json');
  if (existsSync(done)) return JSON.parse(readFileSync(done, 'utf8')) as SearchReport;
  mkdirSync(modeDir, { recursive: true });
  const report = run(modeDir);
  writeFileSync(done, `${JSON.stringify(report)}\n`);
  // Done: its checkpoints (the fingerprint table, hundreds of MB) are of no more use.
  for (const name of readdirSync(modeDir))
    if (name !== 'done.json') rmSync(join(modeDir, name), { recursive: true, force: true });
  return report;
}
