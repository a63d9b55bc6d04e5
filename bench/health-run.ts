import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StatorBenchCluster } from './lib/cluster';
import { cleanupAll, track } from './lib/cleanup';
import { waitHealthy } from './lib/health';
import { AgentVariant, parseVariants, writeLauncher } from './lib/agent-variant';
import { loadAverage, log } from './lib/util';
import { healthSideBySide, renderSideBySide } from './scenarios/health-side-by-side';
import { FAST } from './run';
import { findRepoRoot, preflight } from './lib/preflight';

/**
 * `npm run bench:health`: the health path of several agents side by side in one run, alternating
 * (bench/README.md). BENCH_HEALTH_VARIANTS picks them (default: commit ab96148 against this
 * checkout); BENCH_HEALTH_NODES (default 3), BENCH_HEALTH_PAIRS (default 4), BENCH_HEALTH_SECONDS (default 10).
 */
const REPO_ROOT = findRepoRoot(__dirname);
export const DEFAULT_VARIANTS = 'ab96148:commit=ab96148;current';

async function main(): Promise<void> {
  preflight([]);
  const baseDir = mkdtempSync(join(tmpdir(), 'stator-bench-health-'));
  chmodSync(baseDir, 0o755);
  const nodes = Number(process.env.BENCH_HEALTH_NODES ?? 3);
  const pairs = Number(process.env.BENCH_HEALTH_PAIRS ?? 4);
  const seconds = Number(process.env.BENCH_HEALTH_SECONDS ?? 10);
  const variants = parseVariants(
    process.env.BENCH_HEALTH_VARIANTS ?? DEFAULT_VARIANTS,
    REPO_ROOT,
    join(tmpdir(), 'stator-bench-builds'),
  );
  const loadAtStart = loadAverage();
  let failed = false;
  try {
    const clusters = await startVariants(variants, baseDir, nodes);
    const runs = await healthSideBySide(clusters, pairs, seconds);
    const report = [
      `# Health path side by side, ${new Date().toISOString().slice(0, 16)}Z`,
      '',
      `\`npm run bench:health\`: ${nodes}-node clusters, one per agent variant, each with its own etcd; load average at start ${loadAtStart}.`,
      '',
      ...variants.map(
        (v) =>
          `- \`${v.label}\`: ${v.checkout === REPO_ROOT ? 'this checkout' : v.checkout}, node ${v.nodeFlags.join(' ') || '(no flags)'}, env ${
            Object.entries(v.env)
              .map(([k, x]) => `${k}=${x}`)
              .join(' ') || '(none)'
          }`,
      ),
      '',
      renderSideBySide(runs, seconds),
    ].join('\n');
    const dir = join(REPO_ROOT, 'bench', 'results');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `${new Date().toISOString().slice(0, 10)}-health.md`);
    writeFileSync(file, report + '\n');
    process.stdout.write(`\n${report}\n`);
    log(`written to ${file}`);
  } catch (error) {
    failed = true;
    log(`aborted: ${(error as Error).stack ?? error}`);
  } finally {
    await cleanupAll();
  }
  if (failed) log(`node directories and logs kept in ${baseDir}`);
  else rmSync(baseDir, { recursive: true, force: true });
  process.exitCode = failed ? 1 : 0;
}

/** One cluster per variant, started one after the other (their starts would otherwise compete for the CPU). */
export async function startVariants(
  variants: AgentVariant[],
  baseDir: string,
  nodes: number,
): Promise<{ variant: string; cluster: StatorBenchCluster }[]> {
  const clusters: { variant: string; cluster: StatorBenchCluster }[] = [];
  for (const variant of variants) {
    const dir = join(baseDir, variant.label.replace(/[^\w.-]/g, '_'));
    const agentProgram = writeLauncher(variant, baseDir);
    log(`starting ${nodes}-node cluster of ${variant.label}`);
    const cluster = await StatorBenchCluster.start(dir, FAST, 'bench', { label: variant.label, agentProgram, nodes });
    track(cluster);
    await waitHealthy(cluster, 180_000);
    clusters.push({ variant: variant.label, cluster });
  }
  return clusters;
}

// Ctrl-C stops every process started: run.ts's handlers (imported above) do it.
if (require.main === module) {
  main().catch(async (error) => {
    process.stderr.write(`${(error as Error).stack ?? error}\n`);
    await cleanupAll();
    process.exit(1);
  });
}
