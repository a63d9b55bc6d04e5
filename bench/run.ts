import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BenchCluster, StatorBenchCluster, Timing } from './lib/cluster';
import { cleanupAll, killEverythingNow, track, untrack } from './lib/cleanup';
import { waitHealthy } from './lib/health';
import { PatroniBenchCluster } from './lib/patroni-cluster';
import { createWriteTable } from './lib/write-probe';
import { WRK_BINARY } from './lib/wrk';
import { log, now, sleep } from './lib/util';
import { healthChecks, HEALTH_TARGETS } from './scenarios/health-checks';
import { switchover } from './scenarios/switchover';
import { pgCrash } from './scenarios/pg-crash';
import { failover, LEADER_FAULTS, LeaderFault } from './scenarios/failover';
import { idleCpu, moduleCosts, rss } from './scenarios/footprint';
import { renderReport } from './render';
import type { BenchResults, BenchSettings } from './bench-types';
import { environment, findRepoRoot, preflight } from './lib/preflight';
import { referenceServers } from './lib/reference-servers';
import { commitVariant, currentVariant, writeLauncher } from './lib/agent-variant';
import { healthSideBySide, SideBySideRun } from './scenarios/health-side-by-side';

/**
 * `npm run bench`: Stator and Patroni side by side on this machine (see bench/README.md).
 * BENCH_QUICK=1 cuts durations and run counts (a smoke run; its results go to <date>-quick.md).
 */
const REPO_ROOT = findRepoRoot(__dirname);
const QUICK = process.env.BENCH_QUICK === '1';
/** For working on the benchmark: a comma-separated subset of footprint,health,baseline,switchover,crash,failover. */
const ONLY = process.env.BENCH_SCENARIOS ? new Set(process.env.BENCH_SCENARIOS.split(',')) : null;
const wanted = (scenario: string) => !ONLY || ONLY.has(scenario);
/** The leader faults of the failover scenario (BENCH_FAULTS=agent,frozen...: a subset). */
const FAULTS: LeaderFault[] = process.env.BENCH_FAULTS
  ? LEADER_FAULTS.filter((fault) => process.env.BENCH_FAULTS!.split(',').includes(fault))
  : [...LEADER_FAULTS];

export const SETTINGS: BenchSettings = {
  quick: QUICK,
  wrkSeconds: QUICK ? 3 : 10,
  /** BENCH_IDLE_S: a longer idle window (the per-Node-line footprint in docs/install-and-operate.md uses 120). */
  idleSeconds: Number(process.env.BENCH_IDLE_S ?? (QUICK ? 15 : 60)),
  switchoverRuns: QUICK ? 1 : 5,
  crashRuns: QUICK ? 1 : 3,
  /** Alternating pairs of the health path against BENCH_BASELINE's. */
  baselinePairs: QUICK ? 1 : 3,
  failoverRuns: Number(process.env.BENCH_FAILOVER_RUNS ?? (QUICK ? 1 : 3)),
  ttl30: !QUICK || process.env.BENCH_TTL30 === '1',
  /** Runs stop being started after this (the whole command must stay under 20 minutes). */
  budgetMs: Number(process.env.BENCH_BUDGET_S ?? 1080) * 1000,
};

/** How long the agents settle after the health-check load before idle CPU is measured again. */
const SETTLE_SECONDS = QUICK ? 5 : 30;

/** The older code whose health path this checkout's is measured against (BENCH_BASELINE=0: not measured). */
const BASELINE = process.env.BENCH_BASELINE ?? 'ab96148';

export const FAST: Timing = { ttl: 10, loopWait: 2, retryTimeout: 3 };
export const SLOW: Timing = { ttl: 30, loopWait: 10, retryTimeout: 10 };

const started = now();
const elapsed = () => now() - started;
const withinBudget = () => elapsed() < SETTINGS.budgetMs;

async function main(): Promise<void> {
  const results: BenchResults = {
    date: new Date().toISOString().slice(0, 10),
    startedAt: new Date().toISOString(),
    durationS: 0,
    settings: SETTINGS,
    environment: {},
    patroni: false,
    notes: [],
    health: [],
    reference: [],
    healthBaseline: [],
    rssIdle: [],
    rssAfterLoad: [],
    idleCpu: [],
    idleCpuSettled: [],
    moduleCosts: [],
    switchovers: [],
    crashes: [],
    failovers: [],
    errors: [],
  };
  results.patroni = preflight(results.notes);
  results.environment = environment(results.patroni);
  const baseDir = mkdtempSync(join(tmpdir(), 'stator-bench-'));
  chmodSync(baseDir, 0o755); // PostgreSQL runs as the postgres OS user and must reach its directories
  log(`node directories under ${baseDir}${QUICK ? ' (BENCH_QUICK=1: shortened run)' : ''}`);
  let failed = false;
  try {
    await phaseFast(baseDir, results);
    if (SETTINGS.ttl30) await phaseSlow(baseDir, results);
  } catch (error) {
    failed = true;
    results.errors.push(`aborted: ${(error as Error).stack ?? error}`);
    log(`aborted: ${(error as Error).message}`);
  } finally {
    await cleanupAll();
  }
  results.durationS = elapsed() / 1000;
  const report = renderReport(results);
  const dir = join(REPO_ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const name = `${results.date}${QUICK || ONLY ? '-quick' : ''}`;
  writeFileSync(join(dir, `${name}.md`), report);
  writeFileSync(join(dir, `${name}.json`), JSON.stringify(results, null, 1) + '\n');
  if (!QUICK && !ONLY && !failed) quoteInReadme(report, `results/${name}.md`);
  process.stdout.write(`\n${report}\n`);
  log(`results written to bench/results/${name}.md (${(results.durationS / 60).toFixed(1)} min)`);
  if (failed || results.errors.length) log(`node directories and logs kept in ${baseDir}`);
  else rmSync(baseDir, { recursive: true, force: true });
  process.exitCode = failed ? 1 : 0;
  if (ONLY) log(`BENCH_SCENARIOS=${[...ONLY].join(',')}: partial run`);
}

/** Stator and Patroni at ttl 10 / loop_wait 2: footprint, health checks, switchover, PostgreSQL crash, failover. */
async function phaseFast(baseDir: string, results: BenchResults): Promise<void> {
  const clusters = await startClusters(baseDir, FAST, results.patroni);
  const leaders = await Promise.all(clusters.map(async (c) => (await waitHealthy(c, 180_000)).leader));
  await Promise.all(leaders.map((l) => createWriteTable(l.pgPort)));
  await sleep(5000);

  if (wanted('footprint')) {
    log('scenario 5: footprint at idle');
    clusters.forEach((c, i) => results.rssIdle.push(...rss(c, leaders[i].name)));
    results.idleCpu = await idleCpu(clusters, SETTINGS.idleSeconds);
    results.moduleCosts = moduleCosts(REPO_ROOT);
  }
  if (wanted('health')) {
    log('scenario 1: health checks under wrk');
    if (existsSync(WRK_BINARY)) {
      // The do-nothing reference servers run right after the /primary pair, in the same conditions.
      results.health = await healthChecks(clusters, SETTINGS.wrkSeconds, async () => {
        const leaderLoadRuns = HEALTH_TARGETS.filter((target) => target.on === 'leader').length;
        results.reference = await referenceServers(REPO_ROOT, SETTINGS.wrkSeconds, leaderLoadRuns).catch((error) => {
          results.errors.push(`reference servers: ${(error as Error).message}`);
          return [];
        });
        for (const r of results.reference) {
          const rss = `RSS ${((r.memoryIdle?.rss ?? NaN) / 1024).toFixed(1)} MiB idle, ${((r.memoryAfterLoad?.rss ?? NaN) / 1024).toFixed(1)} after its load`;
          log(
            `reference ${r.server}: ${r.result.requestsPerSecond.toFixed(0)} req/s, p50 ${r.result.p50Ms} ms, p99 ${r.result.p99Ms} ms; ${rss}`,
          );
        }
      });
    } else results.notes.push(`wrk is missing (${WRK_BINARY}): health checks not measured`);
  }
  if (wanted('baseline') && BASELINE !== '0' && existsSync(WRK_BINARY)) {
    log(`scenario 1b: the health path against ${BASELINE}'s, alternating`);
    results.healthBaseline = await againstBaseline(
      baseDir,
      clusters.find((c) => c.kind === 'stator')!,
    ).catch((error) => {
      results.errors.push(`health path against ${BASELINE}: ${(error as Error).message}`);
      return [];
    });
  }
  if (wanted('footprint')) {
    const afterLoadLeaders = await Promise.all(clusters.map(async (c) => (await waitHealthy(c, 60_000)).leader));
    clusters.forEach((c, i) => results.rssAfterLoad.push(...rss(c, afterLoadLeaders[i].name)));
    // The first reading starts seconds after the agents did: Node is still compiling and collecting
    // startup garbage then. This one is a long-running agent's idle, after the same settling for both.
    log(`scenario 5: idle CPU again after ${SETTLE_SECONDS} s of settling`);
    await sleep(SETTLE_SECONDS * 1000);
    results.idleCpuSettled = await idleCpu(clusters, SETTINGS.idleSeconds);
  }
  if (wanted('switchover')) {
    log('scenario 2: planned switchover');
    await interleave(
      clusters,
      SETTINGS.switchoverRuns,
      'switchover',
      (c, i) => switchover(c, i),
      results.switchovers,
      results.errors,
    );
  }
  if (wanted('crash')) {
    log('scenario 4: leader PostgreSQL crash');
    await interleave(
      clusters,
      SETTINGS.crashRuns,
      'postgres crash',
      (c) => pgCrash(c),
      results.crashes,
      results.errors,
    );
  }
  if (wanted('failover')) {
    for (const fault of FAULTS) {
      log(`scenario 3: unplanned failover at ttl 10 / loop_wait 2 (${fault})`);
      await interleave(
        clusters,
        SETTINGS.failoverRuns,
        `failover ttl 10 (${fault})`,
        (c) => failover(c, fault),
        results.failovers,
        results.errors,
      );
    }
  }
  await stopClusters(clusters);
}

/**
 * BENCH_BASELINE's code (built from git) in a 3-node cluster of its own, `/primary` on its leader and
 * on this checkout's in turn; the cluster is stopped afterwards.
 */
async function againstBaseline(baseDir: string, current: BenchCluster): Promise<SideBySideRun[]> {
  const variant = commitVariant(REPO_ROOT, BASELINE, join(baseDir, 'builds'));
  const baseline = await StatorBenchCluster.start(join(baseDir, `stator-${BASELINE}`), FAST, 'bench', {
    label: BASELINE,
    agentProgram: writeLauncher(variant, join(baseDir, 'builds')),
  });
  track(baseline);
  try {
    await waitHealthy(baseline, 180_000);
    const runs = [
      { variant: BASELINE, cluster: baseline },
      { variant: currentVariant(REPO_ROOT, 'this checkout').label, cluster: current },
    ];
    return await healthSideBySide(runs, SETTINGS.baselinePairs, SETTINGS.wrkSeconds);
  } finally {
    await stopClusters([baseline]);
  }
}

/** Stator and Patroni at ttl 30 / loop_wait 10: failover. */
async function phaseSlow(baseDir: string, results: BenchResults): Promise<void> {
  if (!wanted('failover')) return;
  if (!withinBudget()) {
    results.notes.push('ttl 30 failover skipped: the time budget was spent');
    return;
  }
  const clusters = await startClusters(join(baseDir, 'ttl30'), SLOW, results.patroni);
  const leaders = await Promise.all(clusters.map(async (c) => (await waitHealthy(c, 180_000)).leader));
  await Promise.all(leaders.map((l) => createWriteTable(l.pgPort)));
  for (const fault of FAULTS) {
    if (!withinBudget()) break;
    log(`scenario 3: unplanned failover at ttl 30 / loop_wait 10 (${fault})`);
    await interleave(
      clusters,
      SETTINGS.failoverRuns,
      `failover ttl 30 (${fault})`,
      (c) => failover(c, fault),
      results.failovers,
      results.errors,
    );
  }
  await stopClusters(clusters);
}

async function startClusters(baseDir: string, timing: Timing, withPatroni: boolean): Promise<BenchCluster[]> {
  log(
    `starting ${withPatroni ? 'Stator and Patroni clusters' : 'a Stator cluster'} (3 nodes each) at ttl ${timing.ttl} / loop_wait ${timing.loopWait} / retry_timeout ${timing.retryTimeout}`,
  );
  const t0 = now();
  const starts: Promise<BenchCluster>[] = [StatorBenchCluster.start(join(baseDir, 'stator'), timing, 'bench')];
  if (withPatroni) starts.push(PatroniBenchCluster.start(join(baseDir, 'patroni'), timing, 'bench'));
  const settled = await Promise.allSettled(starts);
  const clusters = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  clusters.forEach(track);
  const failure = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failure) throw failure.reason;
  await Promise.all(
    clusters.map(async (c) =>
      log(`${c.label} healthy after ${(((await waitHealthy(c, 180_000)).at - t0) / 1000).toFixed(1)} s`),
    ),
  );
  return clusters;
}

async function stopClusters(clusters: BenchCluster[]): Promise<void> {
  await Promise.all(clusters.map((c) => c.stop()));
  clusters.forEach(untrack);
}

/** Clusters that stayed unhealthy after a failed run: their remaining runs (of every scenario) are skipped. */
const brokenClusters = new Set<BenchCluster>();

/** Run i of each cluster, alternating which one goes first, skipping what the time budget no longer allows. */
async function interleave<T>(
  clusters: BenchCluster[],
  runs: number,
  what: string,
  run: (cluster: BenchCluster, index: number) => Promise<T>,
  into: T[],
  errors: string[],
): Promise<void> {
  const broken = brokenClusters;
  for (let i = 0; i < runs; i++) {
    const order = i % 2 === 0 ? clusters : [...clusters].reverse();
    for (const cluster of order) {
      if (!withinBudget()) {
        errors.push(
          `${what}: run ${i + 1} of ${cluster.kind} skipped (time budget of ${SETTINGS.budgetMs / 1000} s spent)`,
        );
        continue;
      }
      if (broken.has(cluster)) {
        errors.push(`${what}: run ${i + 1} of ${cluster.kind} skipped (the cluster did not recover)`);
        continue;
      }
      try {
        into.push(await run(cluster, i));
      } catch (error) {
        errors.push(`${what}: run ${i + 1} of ${cluster.kind} failed: ${(error as Error).message}`);
        log(`${what} run ${i + 1} of ${cluster.kind} failed: ${(error as Error).message}`);
        // Waiting minutes for a cluster that cannot recover would spend the time budget of the others.
        if (
          !(await waitHealthy(cluster, 60_000).then(
            () => true,
            () => false,
          ))
        )
          broken.add(cluster);
      }
    }
  }
}

const START = '<!-- latest-results:start -->';
const END = '<!-- latest-results:end -->';

/** bench/README.md quotes the latest full run between two markers. */
function quoteInReadme(report: string, file: string): void {
  const readme = join(REPO_ROOT, 'bench', 'README.md');
  if (!existsSync(readme)) return;
  const text = readFileSync(readme, 'utf8');
  const from = text.indexOf(START);
  const to = text.indexOf(END);
  if (from < 0 || to < from) return;
  const body = report.replace(/^# .*\n/, '').replace(/^#/gm, '###');
  writeFileSync(
    readme,
    `${text.slice(0, from + START.length)}\n\nFrom [${file}](${file}):\n\n${body.trim()}\n\n${text.slice(to)}`,
  );
}

let interrupted = 0;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    interrupted++;
    if (interrupted > 1) {
      killEverythingNow();
      process.exit(130);
    }
    log(`${signal}: stopping every process the benchmark started (again to kill them at once)...`);
    void cleanupAll().then(() => process.exit(130));
  });
}

if (require.main === module) {
  main().catch(async (error) => {
    process.stderr.write(`${(error as Error).stack ?? error}\n`);
    await cleanupAll();
    process.exit(1);
  });
}
