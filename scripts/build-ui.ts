import { buildSync } from 'esbuild';
import { join, resolve } from 'node:path';

/**
 * Part of `npm run build`: bundles `stator audit replay --at`'s fold (src/audit/cluster-at.ts and
 * the projections it folds) for the browser as `dist/ui/replay-fold.js`, a script that defines
 * `StatorReplay.clusterAt`. The page's time travel calls it, so the page and the CLI share one
 * implementation. esbuild is a devDependency: the agent only serves the file.
 */
const root = resolve(__dirname, '..', '..');
const outfile = join(root, 'dist', 'ui', 'replay-fold.js');
buildSync({
  entryPoints: [join(root, 'src', 'audit', 'cluster-at.ts')],
  bundle: true,
  format: 'iife',
  globalName: 'StatorReplay',
  platform: 'browser',
  target: 'es2022',
  outfile,
  legalComments: 'none',
  logLevel: 'warning',
});
