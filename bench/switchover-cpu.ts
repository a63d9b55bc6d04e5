import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BenchCluster, StatorBenchCluster, Timing } from './lib/cluster';
import { cleanupAll, track, untrack } from './lib/cleanup';
import { waitHealthy } from './lib/health';
import { httpPost } from './lib/http';
import { PatroniBenchCluster } from './lib/patroni-cluster';
import { cpuSeconds } from './lib/proc';
import { EtcdLoad, etcdLoad, EtcdScrape, scrapeEtcd } from './lib/etcd-metrics';
import { log, median, sleep } from './lib/util';

/**
 * `node dist/bench/switchover-cpu.js [switchovers] [rounds]` (after `npm run build`): what one switchover costs the
 * machine, Stator and Patroni 3.0.2 side by side. Each round starts a 3-node cluster of each product in turn (the
 * order alternating from round to round), waits until it is healthy and quiet, then reads the CPU time of the whole
 * machine (/proc/stat), of the agents, of etcd and of the bench itself over `switchovers` switchovers one after the
 * other, and over an idle window as long, so that the idle rate is taken off. "Processes" counts the PIDs the kernel
 * handed out in the window (forks and threads, PostgreSQL's backends included). Prints a Markdown table; a quiet
 * machine is needed, as for every bench.
 */
const TIMING: Timing = { ttl: 10, loopWait: 2, retryTimeout: 3 };
const QUIET_MS = 5000;
/** etcd's figures per switchover: the key etcdPerSwitchover gives each, and its column. */
const ETCD_FIGURES: Array<[key: string, column: string]> = [
  ['Range', 'Range'],
  ['Txn', 'Txn'],
  ['Put', 'Put'],
  ['LeaseKeepAlive', 'LeaseKeepAlive'],
  ['Watch', 'Watch'],
  ['writes', 'raft writes'],
  ['watchEvents', 'watch events'],
  ['kibIn', 'KiB in'],
  ['kibOut', 'KiB out'],
];

interface Reading {
  at: number;
  /** Busy CPU seconds of the whole machine: /proc/stat's first line without idle and iowait. */
  machine: number;
  agents: number;
  etcd: number;
  bench: number;
  /** The last PID handed out (/proc/loadavg). */
  lastPid: number;
}

interface Window {
  seconds: number;
  machine: number;
  agents: number;
  etcd: number;
  bench: number;
  processes: number;
}

interface ProductRun {
  kind: string;
  switchovers: Window;
  idle: Window;
  count: number;
  /** etcd's own counters over the two windows. */
  etcdSwitchovers: EtcdLoad;
  etcdIdle: EtcdLoad;
}

async function main(): Promise<void> {
  const count = Number(process.argv[2] ?? 5);
  const rounds = Number(process.argv[3] ?? 2);
  const runs: ProductRun[] = [];
  for (let round = 0; round < rounds; round++) {
    const order: Array<'stator' | 'patroni'> = round % 2 === 0 ? ['stator', 'patroni'] : ['patroni', 'stator'];
    for (const kind of order) runs.push(await measure(kind, count, round));
  }
  process.stdout.write(render(runs) + '\n');
}

async function measure(kind: 'stator' | 'patroni', count: number, round: number): Promise<ProductRun> {
  const baseDir = mkdtempSync(join(tmpdir(), `stator-switchover-cpu-${kind}-`));
  chmodSync(baseDir, 0o755);
  const scope = `cpu${round}`;
  const cluster: BenchCluster =
    kind === 'stator'
      ? await StatorBenchCluster.start(join(baseDir, 'stator'), TIMING, scope)
      : await PatroniBenchCluster.start(join(baseDir, 'patroni'), TIMING, scope);
  track(cluster);
  try {
    await waitHealthy(cluster, 180_000);
    // Past the start's checkpoints, slot creation and first member writes.
    await sleep(15_000);
    await waitHealthy(cluster, 60_000);
    const read = () => reading(cluster);
    const scrape = () => scrapeEtcd([cluster.etcdEndpoint]);
    const etcdBefore = await scrape();
    const before = read();
    for (let i = 0; i < count; i++) {
      const { leader } = await waitHealthy(cluster, 60_000, undefined, 500);
      const candidate = cluster.nodes.find((node) => node !== leader)!;
      const answer = await httpPost(
        `${leader.apiUrl}/switchover`,
        { leader: leader.name, candidate: candidate.name },
        60_000,
      );
      if (answer.status !== 200)
        throw new Error(`${kind}: switchover ${i + 1} answered ${answer.status}: ${answer.text}`);
      await waitHealthy(cluster, 120_000, candidate, 500);
    }
    await sleep(QUIET_MS);
    const afterSwitchovers = read();
    const etcdAfterSwitchovers: EtcdScrape = await scrape();
    await sleep(afterSwitchovers.at - before.at);
    const afterIdle = read();
    const etcdAfterIdle = await scrape();
    const run = {
      kind,
      count,
      switchovers: difference(before, afterSwitchovers),
      idle: difference(afterSwitchovers, afterIdle),
      etcdSwitchovers: etcdLoad(etcdBefore, etcdAfterSwitchovers),
      etcdIdle: etcdLoad(etcdAfterSwitchovers, etcdAfterIdle),
    };
    log(`${kind} round ${round + 1}: ${describe(run)}`);
    return run;
  } finally {
    await cluster.stop();
    untrack(cluster);
    rmSync(baseDir, { recursive: true, force: true });
  }
}

function reading(cluster: BenchCluster): Reading {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
  const busyTicks = cpu.slice(0, 8).reduce((sum, value, i) => (i === 3 || i === 4 ? sum : sum + value), 0);
  const agents = cluster.nodes.reduce((sum, node) => sum + (cpuSeconds(node.agentPid() ?? 0) ?? NaN), 0);
  return {
    at: Date.now(),
    machine: busyTicks / 100,
    agents,
    etcd: cpuSeconds(cluster.etcdPid) ?? NaN,
    bench: cpuSeconds(process.pid) ?? NaN,
    lastPid: Number(readFileSync('/proc/loadavg', 'utf8').trim().split(/\s+/)[4]),
  };
}

function difference(from: Reading, to: Reading): Window {
  return {
    seconds: (to.at - from.at) / 1000,
    machine: to.machine - from.machine,
    agents: to.agents - from.agents,
    etcd: to.etcd - from.etcd,
    bench: to.bench - from.bench,
    processes: to.lastPid - from.lastPid,
  };
}

/** Per switchover, the idle window's rate taken off: what the switchovers added. */
function perSwitchover(run: ProductRun): Omit<Window, 'seconds'> {
  const excess = (key: keyof Window) =>
    (run.switchovers[key] - (run.idle[key] * run.switchovers.seconds) / run.idle.seconds) / run.count;
  return {
    machine: excess('machine') - excess('bench'),
    agents: excess('agents'),
    etcd: excess('etcd'),
    bench: excess('bench'),
    processes: excess('processes'),
  };
}

/** etcd's requests by kind, raft proposals and bytes per switchover, the idle rate taken off. */
function etcdPerSwitchover(run: ProductRun): Record<string, number> {
  const { etcdSwitchovers: busy, etcdIdle: idle } = run;
  const excess = (busyRate: number, idleRate: number) => ((busyRate - idleRate) * busy.seconds) / run.count;
  const figures: Record<string, number> = {};
  for (const kind of ['Range', 'Txn', 'Put', 'LeaseKeepAlive', 'Watch'])
    figures[kind] = excess(busy.requestsPerSecond[kind] ?? 0, idle.requestsPerSecond[kind] ?? 0);
  figures.writes = excess(busy.proposalsPerSecond, idle.proposalsPerSecond);
  figures.watchEvents = excess(busy.watchEventsPerSecond, idle.watchEventsPerSecond);
  figures.kibIn = excess(busy.bytesInPerSecond, idle.bytesInPerSecond) / 1024;
  figures.kibOut = excess(busy.bytesOutPerSecond, idle.bytesOutPerSecond) / 1024;
  return figures;
}

function describe(run: ProductRun): string {
  const per = perSwitchover(run);
  return (
    `${run.count} switchovers in ${run.switchovers.seconds.toFixed(1)} s; per switchover: machine ${per.machine.toFixed(2)} s ` +
    `(agents ${per.agents.toFixed(2)}, etcd ${per.etcd.toFixed(2)}, the rest ${(per.machine - per.agents - per.etcd).toFixed(2)}), ` +
    `${per.processes.toFixed(0)} processes; etcd ${Object.entries(etcdPerSwitchover(run))
      .map(([key, value]) => `${key} ${value.toFixed(1)}`)
      .join(', ')}`
  );
}

function render(runs: ProductRun[]): string {
  const row = (kind: string) => {
    const mine = runs.filter((run) => run.kind === kind).map(perSwitchover);
    const cell = (values: number[], digits = 2) =>
      `${median(values).toFixed(digits)} (${values.map((v) => v.toFixed(digits)).join(', ')})`;
    return (
      `| ${kind} | ${cell(mine.map((m) => m.machine))} | ${cell(mine.map((m) => m.agents))} | ${cell(mine.map((m) => m.etcd))} | ` +
      `${cell(mine.map((m) => m.machine - m.agents - m.etcd))} | ${cell(
        mine.map((m) => m.processes),
        0,
      )} |`
    );
  };
  return [
    `CPU seconds per switchover (3-node cluster, ttl ${TIMING.ttl} / loop_wait ${TIMING.loopWait}), the idle rate taken off, ` +
      `median (each round):`,
    '',
    '| product | machine (bench excluded) | agents | etcd | the rest: PostgreSQL, fences, programs, kernel | processes |',
    '|---|---|---|---|---|---|',
    row('stator'),
    row('patroni'),
    '',
    "etcd's requests by kind, raft writes, watch events and KiB per switchover (the idle rate taken off), median:",
    '',
    `| product | ${ETCD_FIGURES.map(([, column]) => column).join(' | ')} |`,
    `|---|${ETCD_FIGURES.map(() => '---').join('|')}|`,
    etcdRow('stator'),
    etcdRow('patroni'),
  ].join('\n');

  function etcdRow(kind: string): string {
    const mine = runs.filter((run) => run.kind === kind).map(etcdPerSwitchover);
    return `| ${kind} | ${ETCD_FIGURES.map(([key]) => median(mine.map((m) => m[key])).toFixed(1)).join(' | ')} |`;
  }
}

main()
  .catch((error: Error) => {
    process.stderr.write(`${error.stack ?? error.message}\n`);
    process.exitCode = 1;
  })
  .finally(() => cleanupAll());
