import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BenchCluster, StatorBenchCluster, Timing } from './lib/cluster';
import { cleanupAll, track, untrack } from './lib/cleanup';
import { BenchHaproxy, HAPROXY_BINARY, HaproxyFlavour } from './lib/haproxy';
import { waitHealthy } from './lib/health';
import { httpPatch } from './lib/http';
import { createLbTable } from './lib/lb-traffic';
import { PatroniBenchCluster } from './lib/patroni-cluster';
import { loadAverage, log, now } from './lib/util';
import { LocalPgbouncer, PGBOUNCER_BINARY } from '../scripts/lib/pgbouncer';
import { freePort } from '../scripts/lib/ports';
import { PG_PASSWORD } from './lib/cluster';
import { renderLbReport } from './lb-render';
import { environment, findRepoRoot, preflight } from './lib/preflight';
import type { LbResults } from './lb-types';
import { lbFailover, LbRun, lbSwitchover, LbTarget } from './scenarios/load-balancer';

/**
 * `npm run lb-bench`: Stator and Patroni 3.0.2 behind Debian's HAProxy, side by side in one run:
 * Stator with the shipped configuration (deploy/haproxy.cfg's template), Patroni with its documented
 * one (and with Stator's when LB_PATRONI_TUNED=1). N switchovers and N failovers each, alternating,
 * with a writer through the primary port and a reader through the replica port (bench/README.md).
 */
const REPO_ROOT = findRepoRoot(__dirname);
const RUNS = Number(process.env.LB_RUNS ?? 10);
const PATRONI_RUNS = Number(process.env.LB_PATRONI_RUNS ?? RUNS);
const PATRONI_TUNED = process.env.LB_PATRONI_TUNED === '1';
/** `--pgbouncer`: Stator alone, the writer through PgBouncer (deploy/pgbouncer.ini) in front of HAProxy's primary port. */
const VIA_PGBOUNCER = process.argv.includes('--pgbouncer');
const WANT_PATRONI = process.env.BENCH_PATRONI !== '0' && !VIA_PGBOUNCER;
/** For measuring the default: load_balancer_drain_ms set on the Stator cluster through PATCH /config. */
const STATOR_DRAIN_MS = process.env.LB_STATOR_DRAIN_MS;
/** `switchover`, `failover` or both (default), comma-separated. */
const EVENTS = new Set((process.env.LB_EVENTS ?? 'switchover,failover').split(','));
const BUDGET_MS = Number(process.env.BENCH_BUDGET_S ?? 2400) * 1000;
export const LB_TIMING: Timing = { ttl: 10, loopWait: 2, retryTimeout: 3 };

const started = now();

async function main(): Promise<void> {
  if (!existsSync(HAPROXY_BINARY)) throw new Error(`HAProxy is missing (${HAPROXY_BINARY}): apt-get install haproxy`);
  if (VIA_PGBOUNCER && !existsSync(PGBOUNCER_BINARY))
    throw new Error(`PgBouncer is missing (${PGBOUNCER_BINARY}): apt-get install pgbouncer`);
  const notes: string[] = [];
  const patroni = WANT_PATRONI && preflight(notes);
  for (const note of notes) log(note);
  const results: LbResults = {
    date: new Date().toISOString().slice(0, 10),
    startedAt: new Date().toISOString(),
    durationS: 0,
    runs: { stator: RUNS, patroni: patroni ? PATRONI_RUNS : 0 },
    statorDrainMs: STATOR_DRAIN_MS !== undefined ? Number(STATOR_DRAIN_MS) : 750,
    timing: LB_TIMING,
    environment: {
      ...environment(patroni),
      haproxy: HAPROXY_BINARY,
      ...(VIA_PGBOUNCER ? { pgbouncer: PGBOUNCER_BINARY } : {}),
    },
    targets: [],
    pgbouncer: VIA_PGBOUNCER,
    switchovers: [],
    failovers: [],
    errors: [],
  };
  const baseDir = mkdtempSync(join(tmpdir(), 'stator-lb-bench-'));
  chmodSync(baseDir, 0o755);
  let failed = false;
  try {
    const clusters: BenchCluster[] = [];
    clusters.push(await StatorBenchCluster.start(join(baseDir, 'stator'), LB_TIMING, 'lb'));
    track(clusters[0]);
    if (patroni) {
      clusters.push(await PatroniBenchCluster.start(join(baseDir, 'patroni'), LB_TIMING, 'lb'));
      track(clusters[1]);
    }
    const targets: (LbTarget & { runs: number })[] = [];
    for (const cluster of clusters) {
      const { leader } = await waitHealthy(cluster, 180_000);
      await createLbTable(leader.pgPort);
      if (cluster.kind === 'stator' && STATOR_DRAIN_MS !== undefined) {
        const answer = await httpPatch(`${leader.apiUrl}/config`, { load_balancer_drain_ms: Number(STATOR_DRAIN_MS) });
        if (answer.status !== 200)
          throw new Error(`PATCH /config load_balancer_drain_ms: ${answer.status} ${answer.text}`);
        results.environment.statorDrain = `load_balancer_drain_ms ${STATOR_DRAIN_MS} (PATCH /config)`;
      }
      const flavours: HaproxyFlavour[] =
        cluster.kind === 'stator'
          ? ['stator']
          : PATRONI_TUNED
            ? ['patroni-documented', 'stator']
            : ['patroni-documented'];
      for (const flavour of flavours) {
        const haproxy = await BenchHaproxy.start(cluster, flavour, baseDir);
        const pgbouncerPort = VIA_PGBOUNCER ? await startPgbouncer(baseDir, haproxy.primaryPort) : undefined;
        targets.push({ cluster, haproxy, pgbouncerPort, runs: cluster.kind === 'stator' ? RUNS : PATRONI_RUNS });
      }
    }
    results.targets = targets.map(
      (t) =>
        `${t.cluster.kind} with ${t.haproxy.flavour} HAProxy configuration (${t.haproxy.configPath.split('/').pop()})`,
    );
    log(`targets: ${results.targets.join('; ')}; load ${loadAverage()}`);
    if (EVENTS.has('switchover'))
      await interleave(targets, 'switchover', lbSwitchover, results.switchovers, results.errors);
    if (EVENTS.has('failover')) await interleave(targets, 'failover', lbFailover, results.failovers, results.errors);
    for (const target of targets) target.haproxy.stop();
    await Promise.all(clusters.map((c) => c.stop()));
    clusters.forEach(untrack);
  } catch (error) {
    failed = true;
    results.errors.push(`aborted: ${(error as Error).stack ?? error}`);
    log(`aborted: ${(error as Error).message}`);
  } finally {
    await cleanupAll();
  }
  results.durationS = (now() - started) / 1000;
  const dir = join(REPO_ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const name = `${results.date}-load-balancers${VIA_PGBOUNCER ? '-pgbouncer' : ''}${process.env.LB_RESULTS_SUFFIX ?? ''}`;
  const report = renderLbReport(results);
  writeFileSync(join(dir, `${name}.md`), report);
  writeFileSync(join(dir, `${name}.json`), JSON.stringify(results, null, 1) + '\n');
  process.stdout.write(`\n${report}\n`);
  log(`results written to bench/results/${name}.md (${(results.durationS / 60).toFixed(1)} min)`);
  if (failed || results.errors.length) log(`node directories and logs kept in ${baseDir}`);
  else rmSync(baseDir, { recursive: true, force: true });
  process.exitCode = failed ? 1 : 0;
}

/** PgBouncer from the shipped ini in front of `upstreamPort`, as the postgres OS user, stopped by PID with the rest. */
async function startPgbouncer(baseDir: string, upstreamPort: number): Promise<number> {
  const dir = join(baseDir, 'pgbouncer');
  mkdirSync(dir);
  const bouncer = await LocalPgbouncer.start({
    dir,
    listenPort: await freePort(),
    upstreamPort,
    user: 'postgres',
    password: PG_PASSWORD,
  });
  track({ label: 'pgbouncer', stop: () => bouncer.stop(), pids: () => (bouncer.pid ? [bouncer.pid] : []) });
  return bouncer.port;
}

/** Run i of every target, alternating which goes first, while the time budget lasts. */
async function interleave(
  targets: (LbTarget & { runs: number })[],
  what: string,
  run: (target: LbTarget, index: number) => Promise<LbRun>,
  into: LbRun[],
  errors: string[],
): Promise<void> {
  const most = Math.max(...targets.map((t) => t.runs));
  for (let i = 0; i < most; i++) {
    const order = i % 2 === 0 ? targets : [...targets].reverse();
    for (const target of order) {
      if (i >= target.runs) continue;
      const label = `${what} ${i + 1} of ${target.cluster.kind}/${target.haproxy.flavour}`;
      if (now() - started > BUDGET_MS) {
        errors.push(`${label} skipped: time budget spent`);
        continue;
      }
      try {
        into.push(await run(target, i));
      } catch (error) {
        errors.push(`${label} failed: ${(error as Error).message}`);
        log(`${label} failed: ${(error as Error).message}`);
      }
    }
  }
}

if (require.main === module) {
  main().catch(async (error) => {
    process.stderr.write(`${(error as Error).stack ?? error}\n`);
    await cleanupAll();
    process.exit(1);
  });
}
