import { join } from 'node:path';
import { EtcdCluster } from '../../scripts/lib/etcd-cluster';
import { BenchCluster, Kind, StatorBenchCluster, Timing } from './cluster';
import { track, untrack } from './cleanup';
import { waitHealthy } from './health';
import { PatroniBenchCluster } from './patroni-cluster';
import { cpuSeconds, memory } from './proc';
import { log, now, spread, Spread } from './util';

/** N clusters of one product (3 nodes each, scopes `fleet-1`...`fleet-N`) on one shared etcd cluster. */
export interface Fleet {
  kind: Kind;
  etcd: EtcdCluster;
  clusters: BenchCluster[];
  /** From the first start until every cluster was healthy, ms. */
  startMs: number;
}

/**
 * Starts the fleet `batch` clusters at a time (sixty initdb and base backups at once would only queue on the CPU) and
 * waits until every cluster is healthy. Each cluster is registered for cleanup as soon as it starts.
 */
export async function startFleet(
  kind: Kind,
  count: number,
  baseDir: string,
  timing: Timing,
  etcd: EtcdCluster,
  batch: number,
): Promise<Fleet> {
  const started = now();
  const clusters: BenchCluster[] = [];
  /** Every cluster started so far, in the order they started (a failed batch's too). */
  const launched: BenchCluster[] = [];
  try {
    for (let first = 1; first <= count; first += batch) {
      const scopes = Array.from({ length: Math.min(batch, count - first + 1) }, (_, i) => `fleet-${first + i}`);
      const starting = await Promise.all(
        scopes.map(async (scope) => {
          const dir = join(baseDir, scope);
          const cluster =
            kind === 'stator'
              ? await StatorBenchCluster.start(dir, timing, scope, undefined, etcd)
              : await PatroniBenchCluster.start(dir, timing, scope, etcd);
          track(cluster);
          launched.push(cluster);
          return cluster;
        }),
      );
      clusters.push(...starting);
      await Promise.all(starting.map((cluster) => waitHealthy(cluster, 300_000)));
      log(`${kind}: ${clusters.length} of ${count} clusters healthy`);
    }
  } catch (error) {
    // The next fleet must not run beside this one's remains.
    await Promise.all(launched.map((cluster) => cluster.stop()));
    launched.forEach(untrack);
    throw error;
  }
  return { kind, etcd, clusters, startMs: now() - started };
}

export async function stopFleet(fleet: Fleet): Promise<void> {
  await Promise.all(fleet.clusters.map((cluster) => cluster.stop()));
}

/** CPU seconds of a set of processes at one moment, by PID (a process gone by the end counts for nothing). */
type CpuMark = Map<number, number>;

function cpuMark(pids: number[]): CpuMark {
  const mark: CpuMark = new Map();
  for (const pid of pids) {
    const seconds = cpuSeconds(pid);
    if (seconds !== null) mark.set(pid, seconds);
  }
  return mark;
}

/** One agent: its own process and its helpers (Stator's fence), counted together. */
interface AgentPids {
  pids: number[];
}

function agentsOf(fleet: Fleet): AgentPids[] {
  return fleet.clusters.flatMap((cluster) =>
    cluster.nodes.map((node) => ({
      pids: [node.agentPid(), ...node.helperPids()].filter((pid): pid is number => pid !== null),
    })),
  );
}

export interface ProcessUsage {
  /** Per agent (with its helpers): CPU seconds per minute of the window, and RSS at its end (MiB). */
  agentCpuPerMinute: Spread;
  agentRssMiB: Spread;
  agents: number;
  /** The etcd members together: CPU seconds per minute, RSS at the end (MiB). */
  etcdCpuPerMinute: number;
  etcdRssMiB: number;
}

/** Marks every agent's and etcd member's CPU now; `finish()` reads them again and gives the usage over the interval. */
export function startProcessUsage(fleet: Fleet): { finish(): ProcessUsage } {
  const agents = agentsOf(fleet);
  const etcdPids = fleet.etcd.members.map((member) => member.pid);
  const startedAt = now();
  const agentMarks = agents.map((agent) => cpuMark(agent.pids));
  const etcdMark = cpuMark(etcdPids);
  const used = (before: CpuMark, after: CpuMark) =>
    [...before].reduce((total, [pid, seconds]) => total + (after.has(pid) ? after.get(pid)! - seconds : 0), 0);
  const rssMiB = (pids: number[]) => pids.reduce((total, pid) => total + (memory(pid)?.rss ?? 0), 0) / 1024;
  return {
    finish() {
      const minutes = (now() - startedAt) / 60_000;
      return {
        agentCpuPerMinute: spread(agents.map((agent, i) => used(agentMarks[i], cpuMark(agent.pids)) / minutes)),
        agentRssMiB: spread(agents.map((agent) => rssMiB(agent.pids))),
        agents: agents.length,
        etcdCpuPerMinute: used(etcdMark, cpuMark(etcdPids)) / minutes,
        etcdRssMiB: rssMiB(etcdPids),
      };
    },
  };
}
