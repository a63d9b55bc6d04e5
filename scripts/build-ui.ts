import { buildSync, BuildOptions } from 'esbuild';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * Part of `npm run build`: bundles `stator audit replay --at`'s fold (src/audit/browser-replay.ts:
 * cluster-at.ts and the projections it folds) for the browser as `dist/ui/replay-fold.js`, a
 * script that defines `StatorReplay.clusterAt` and `StatorReplay.coveredByCheckpoint`. The page's time travel calls it, so the page and the CLI share one
 * implementation. esbuild is a devDependency: the agent only serves the file.
 */
/** The checkout: above `scripts/` (run by ts in tests) or `dist/scripts/` (built). */
function checkoutRoot(from: string): string {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) if (existsSync(join(dir, 'package.json'))) return dir;
  throw new Error(`no package.json above ${from}`);
}

const ROOT = checkoutRoot(__dirname);
export const REPLAY_FOLD_FILE = join(ROOT, 'dist', 'ui', 'replay-fold.js');

const OPTIONS: BuildOptions = {
  entryPoints: [join(ROOT, 'src', 'audit', 'browser-replay.ts')],
  bundle: true,
  format: 'iife',
  globalName: 'StatorReplay',
  platform: 'browser',
  target: 'es2022',
  legalComments: 'none',
  logLevel: 'warning',
};

/** The bundle's text (for tests), or written to REPLAY_FOLD_FILE. */
export function bundleReplayFold(write: boolean): string {
  const result = buildSync({ ...OPTIONS, outfile: REPLAY_FOLD_FILE, write });
  return write ? '' : (result.outputFiles?.[0]?.text ?? '');
}

if (require.main === module) bundleReplayFold(true);
