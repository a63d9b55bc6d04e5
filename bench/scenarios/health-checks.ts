import { BenchCluster } from '../lib/cluster';
import { httpCode } from '../lib/http';
import { waitHealthy } from '../lib/health';
import { runWrk, WrkResult } from '../lib/wrk';
import { loadAverage, log, sleep } from '../lib/util';

export interface HealthCheckTarget {
  key: string;
  label: string;
  on: 'leader' | 'replica';
  path: (cluster: BenchCluster) => string;
}

export const HEALTH_TARGETS: HealthCheckTarget[] = [
  { key: 'primary', label: 'GET /primary on the leader', on: 'leader', path: () => '/primary' },
  { key: 'replica', label: 'GET /replica on a replica', on: 'replica', path: () => '/replica' },
  { key: 'status', label: 'GET status (/stator, /patroni) on the leader', on: 'leader', path: (c) => c.statusPath },
  { key: 'metrics', label: 'GET /metrics on the leader', on: 'leader', path: () => '/metrics' },
  { key: 'liveness', label: 'GET /liveness on the leader', on: 'leader', path: () => '/liveness' },
];

export interface HealthCheckRun {
  kind: string;
  target: string;
  url: string;
  code: number;
  loadBefore: string;
  result: WrkResult;
}

/** Scenario 1: wrk on each endpoint, Stator and Patroni alternately (the first of each pair alternates too). */
export async function healthChecks(
  clusters: BenchCluster[],
  seconds: number,
  afterFirstTarget?: () => Promise<void>,
): Promise<HealthCheckRun[]> {
  const runs: HealthCheckRun[] = [];
  for (const [index, target] of HEALTH_TARGETS.entries()) {
    if (index === 1 && afterFirstTarget) await afterFirstTarget();
    const order = index % 2 === 0 ? clusters : [...clusters].reverse();
    for (const cluster of order) {
      const { leader } = await waitHealthy(cluster, 60_000);
      const node = target.on === 'leader' ? leader : cluster.nodes.find((n) => n !== leader)!;
      const url = `${node.apiUrl}${target.path(cluster)}`;
      const code = await httpCode(url);
      await sleep(1000); // let the health poll's connections settle
      const loadBefore = loadAverage();
      const result = await runWrk(url, seconds);
      log(
        `${cluster.kind} ${target.key}: ${result.requestsPerSecond.toFixed(0)} req/s, p50 ${result.p50Ms.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms (HTTP ${code}; load ${loadBefore})`,
      );
      runs.push({ kind: cluster.kind, target: target.key, url, code, loadBefore, result: { ...result, raw: '' } });
    }
  }
  return runs;
}
