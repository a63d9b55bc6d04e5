import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ETCD_BINARY } from '../scripts/lib/etcd';
import { EtcdCluster, startEtcdCluster } from '../scripts/lib/etcd-cluster';
import { Kind, PG_BIN_DIR, primaries } from './lib/cluster';
import { cleanupAll, killEverythingNow, track, untrack } from './lib/cleanup';
import { etcdLoad, scrapeEtcd } from './lib/etcd-metrics';
import { snapshotKeys, writesByRole } from './lib/etcd-key-writes';
import { Fleet, startFleet, startProcessUsage, stopFleet } from './lib/fleet';
import { fleetResultName, FleetOptionError, FleetOptions, FLEET_USAGE, parseFleetOptions } from './lib/fleet-options';
import { waitHealthy } from './lib/health';
import { PATRONI_BINARY } from './lib/patroni-cluster';
import { loadAverage, log, now, sleep } from './lib/util';
import { createWriteTable } from './lib/write-probe';
import { failover, FailoverRun } from './scenarios/failover';
import { renderFleetReport } from './fleet-render';
import { runFleetScenarios } from './lib/fleet-scenarios';
import { estimateFleetRun } from './lib/fleet-estimate';
import { writeFleetPlot } from './lib/fleet-plot';
import type { FleetResults, FleetRun } from './fleet-types';
import { environment, findRepoRoot } from './lib/preflight';

const REPO_ROOT = findRepoRoot(__dirname);

/**
 * `npm run fleet-bench`: N clusters of 3 nodes against one 3-member etcd cluster, for each N, Stator's fleet and then
 * Patroni's (Debian's 3.0.2) on a fresh etcd cluster each; what the fleet costs etcd over a settled window, and one
 * cluster's failover while the others run (see bench/README.md, "A fleet on one etcd").
 */
async function main(): Promise<void> {
  let options: FleetOptions;
  try {
    options = parseFleetOptions(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof FleetOptionError)) throw error;
    process.stderr.write(`fleet-bench: ${error.message}\n${FLEET_USAGE}\n`);
    process.exit(2);
  }
  const started = now();
  const results: FleetResults = {
    date: new Date().toISOString().slice(0, 10),
    startedAt: new Date().toISOString(),
    durationS: 0,
    options,
    environment: {},
    runs: [],
    errors: [],
  };
  preflight(options);
  results.environment = environment(options.products.includes('patroni'));
  const baseDir = mkdtempSync(join(tmpdir(), 'stator-fleet-bench-'));
  chmodSync(baseDir, 0o755); // PostgreSQL runs as the postgres OS user and must reach its directories
  log(
    `node directories under ${baseDir}; fleets of ${options.counts.join(', ')} clusters, ${options.windowSeconds} s windows; ` +
      options.scenarios.join(', '),
  );
  log(estimateFleetRun(options).text);
  try {
    for (const [index, count] of options.counts.entries()) {
      // Alternating which product goes first spreads the machine's drift over both.
      const order = index % 2 === 0 ? options.products : [...options.products].reverse();
      for (const kind of order) {
        try {
          const run = await measureFleet(kind, count, join(baseDir, `${kind}-${count}`), options);
          results.runs.push(run);
          if (run.failoverError) results.errors.push(`${kind}, ${count} clusters: ${run.failoverError}`);
          const s = run.scenarios;
          for (const error of [s?.agentFailoverError, s?.stormError, s?.etcdLeaderKillError])
            if (error) results.errors.push(`${kind}, ${count} clusters: ${error}`);
        } catch (error) {
          results.errors.push(`${kind}, ${count} clusters: ${(error as Error).stack ?? error}`);
          log(`${kind}, ${count} clusters failed: ${(error as Error).message}`);
        }
      }
    }
  } finally {
    await cleanupAll();
  }
  results.durationS = (now() - started) / 1000;
  const dir = join(REPO_ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const name = fleetResultName(results.date, options);
  results.plot = await writeFleetPlot(results, join(dir, `${name}.png`));
  const report = renderFleetReport(results);
  writeFileSync(join(dir, `${name}.md`), report);
  writeFileSync(join(dir, `${name}.json`), JSON.stringify(results, null, 1) + '\n');
  process.stdout.write(`\n${report}\n`);
  log(`results written to bench/results/${name}.md (${(results.durationS / 60).toFixed(1)} min)`);
  if (results.errors.length || options.keep) log(`node directories and logs kept in ${baseDir}`);
  else rmSync(baseDir, { recursive: true, force: true });
  process.exitCode = results.errors.length ? 1 : 0;
}

/** One fleet of one product on a fresh 3-member etcd: start, settle, the measured window, the failover, the other faults, stop. */
async function measureFleet(kind: Kind, count: number, baseDir: string, options: FleetOptions): Promise<FleetRun> {
  log(`${kind}: ${count} clusters of 3 nodes on a fresh 3-member etcd`);
  const started = now();
  const etcd = await startEtcdCluster({
    members: 3,
    productionTimeouts: true,
    ...(options.etcdNiceness !== null && { niceness: options.etcdNiceness }),
  });
  const etcdStoppable = {
    label: `etcd of the ${kind} fleet`,
    stop: () => etcd.stop(),
    pids: () => etcd.members.map((m) => m.pid),
  };
  track(etcdStoppable);
  let fleet: Fleet | null = null;
  try {
    fleet = await startFleet(kind, count, baseDir, options.timing.values, etcd, options.startBatch);
    log(
      `${kind}: ${count} clusters healthy after ${(fleet.startMs / 1000).toFixed(0)} s; settling ${options.settleSeconds} s`,
    );
    const first = fleet.clusters[0];
    await createWriteTable((await waitHealthy(first, 60_000)).leader.pgPort);
    await sleep(options.settleSeconds * 1000);

    const loadBefore = loadAverage();
    const window = options.scenarios.includes('window') ? await measureWindow(kind, count, fleet, etcd, options) : {};

    // The clusters no failover sample touches: whether their leaders stayed put.
    const sampled = Math.max(1, Math.min(options.failoverSamples, count));
    const othersBefore = await leaderNames(fleet, sampled);
    let failoverRun: FailoverRun | null = null;
    let failoverError: string | undefined;
    const failovers: FailoverRun[] = [];
    if (options.scenarios.includes('failover')) {
      // Each sample on the next cluster (the first again when there are fewer); failover() waits until it is healthy.
      for (let i = 0; i < options.failoverSamples; i++) {
        const target = fleet.clusters[i % count];
        try {
          if (i > 0 && i < count) await createWriteTable((await waitHealthy(target, 60_000)).leader.pgPort);
          const run = await failover(target, 'agent+postmaster');
          failovers.push(run);
          log(`${kind}, ${count} clusters: failover ${i + 1} of ${target.scope}: ${run.newPrimaryMs.toFixed(0)} ms`);
        } catch (error) {
          failoverError = `failover of ${target.scope}: ${(error as Error).message}`;
          log(`${kind}, ${count} clusters: ${failoverError}`);
        }
      }
      failoverRun = failovers[0] ?? null;
    }
    const othersAfter = await leaderNames(fleet, sampled);
    const scenarios = await runFleetScenarios(fleet, etcd, options.scenarios);
    return {
      kind,
      clusters: count,
      agents: count * 3,
      startMs: fleet.startMs,
      ...window,
      failover: failoverRun,
      ...(failovers.length > 1 && { failovers }),
      ...(failoverError && { failoverError }),
      otherLeadersMoved: othersBefore.filter((name, i) => othersAfter[i] !== name).length,
      scenarios,
      totalSeconds: (now() - started) / 1000,
      loadBefore,
    };
  } finally {
    // Kept runs keep etcd's keys too (the event logs among them): the timeline of a scenario is there.
    if (options.keep) dumpEtcd(etcd.endpoints[0], join(baseDir, 'etcd-keys.json'));
    if (fleet) {
      await stopFleet(fleet);
      fleet.clusters.forEach(untrack);
    }
    await etcd.stop();
    untrack(etcdStoppable);
  }
}

/** The settled window: what the fleet costs etcd, and the agents' idle CPU and RSS. */
async function measureWindow(
  kind: Kind,
  count: number,
  fleet: Fleet,
  etcd: EtcdCluster,
  options: FleetOptions,
): Promise<Pick<FleetRun, 'load' | 'writesPerMinuteByRole' | 'usage' | 'perAgentPerMinute'>> {
  // The keys are read outside the window: the bench's own range counts in none of its figures.
  const keysBefore = await snapshotKeys(etcd.endpoints[0]);
  const usage = startProcessUsage(fleet);
  const before = await scrapeEtcd(etcd.endpoints);
  await sleep(options.windowSeconds * 1000);
  const after = await scrapeEtcd(etcd.endpoints);
  const keysAfter = await snapshotKeys(etcd.endpoints[0]);
  const windowMinutes = (after.at - before.at) / 60_000;
  const writesPerMinuteByRole = Object.fromEntries(
    Object.entries(writesByRole(keysBefore, keysAfter)).map(([role, count]) => [role, count / windowMinutes]),
  );
  const processes = usage.finish();
  const load = etcdLoad(before, after);
  const perMinute = (perSecond: number) => (perSecond * 60) / processes.agents;
  log(
    `${kind}, ${count} clusters: ${load.allRequestsPerSecond.toFixed(1)} requests/s (${perMinute(load.allRequestsPerSecond).toFixed(1)} per agent per minute), ` +
      `${(load.bytesInPerSecond / 1024).toFixed(1)} KiB/s in, ${(load.bytesOutPerSecond / 1024).toFixed(1)} KiB/s out, ${load.watchers} watchers, ` +
      `etcd ${processes.etcdCpuPerMinute.toFixed(2)} CPU s/min and ${processes.etcdRssMiB.toFixed(0)} MiB`,
  );
  return {
    load,
    writesPerMinuteByRole,
    usage: processes,
    perAgentPerMinute: {
      requests: perMinute(load.allRequestsPerSecond),
      bytesIn: perMinute(load.bytesInPerSecond),
      bytesOut: perMinute(load.bytesOutPerSecond),
    },
  };
}

/** Every key and value in etcd, as `etcdctl get --prefix / -w json` prints them (base64), into `file`; a failure is logged. */
function dumpEtcd(endpoint: string, file: string): void {
  try {
    const dump = execFileSync('etcdctl', ['--endpoints', endpoint, 'get', '--prefix', '/', '-w', 'json'], {
      env: { ...process.env, ETCDCTL_API: '3' },
      maxBuffer: 512 * 1024 * 1024,
      timeout: 30_000,
    });
    writeFileSync(file, dump);
    log(`etcd's keys written to ${file}`);
  } catch (error) {
    log(`etcd's keys not kept: ${(error as Error).message}`);
  }
}

/** The leader (the one node answering 200 on /primary, '' when not exactly one) of every cluster from `from` on. */
async function leaderNames(fleet: Fleet, from: number): Promise<string[]> {
  return Promise.all(
    fleet.clusters.slice(from).map(async (cluster) => {
      const found = await primaries(cluster, 2000);
      return found.length === 1 ? found[0].name : '';
    }),
  );
}

/** What the bench needs, checked before anything starts: a missing piece is named with the package that brings it. */
function preflight(options: FleetOptions): void {
  const missing: string[] = [];
  if (!existsSync(ETCD_BINARY)) missing.push(`etcd (${ETCD_BINARY}): apt-get install etcd-server`);
  if (!existsSync(join(PG_BIN_DIR, 'postgres')))
    missing.push(`PostgreSQL 15 (${PG_BIN_DIR}): apt-get install postgresql-15`);
  if (!existsSync(join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js')))
    missing.push('dist/: run `npm run build` (npm run fleet-bench does)');
  if (options.products.includes('patroni')) {
    if (!existsSync(PATRONI_BINARY))
      missing.push(`Patroni (${PATRONI_BINARY}): apt-get install patroni, or --products stator`);
    if (process.getuid?.() !== 0)
      missing.push(
        'root: Patroni must run as the postgres OS user, which only root can switch to (or --products stator)',
      );
  }
  if (missing.length) {
    process.stderr.write(`fleet-bench cannot start; missing:\n${missing.map((m) => `- ${m}`).join('\n')}\n`);
    process.exit(1);
  }
  if (process.getuid?.() === 0)
    execFileSync('sh', [join(REPO_ROOT, 'scripts', 'ensure-pg-user.sh')], { stdio: 'inherit' });
}

let interrupted = 0;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    interrupted++;
    if (interrupted > 1) {
      killEverythingNow();
      process.exit(130);
    }
    log(`${signal}: stopping every process the fleet bench started (again to kill them at once)...`);
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
