import { BenchCluster, BenchNode, primaries, status } from './cluster';
import { streamingReplicas } from './sql';
import { now, pollUntil } from './util';

/**
 * The cluster is healthy when exactly one node answers 200 on `/primary` (the expected one, when
 * given), every node's status document says `state: running`, and the leader's
 * `pg_stat_replication` shows every other node streaming (read from PostgreSQL itself, the same
 * way for both agents).
 */
export async function healthyLeader(cluster: BenchCluster, expected?: BenchNode): Promise<BenchNode | null> {
  const leaders = await primaries(cluster, 500);
  if (leaders.length !== 1) return null;
  const leader = leaders[0];
  if (expected && leader !== expected) return null;
  const states = await Promise.all(cluster.nodes.map((n) => status(cluster, n, 500)));
  if (!states.every((s) => s?.state === 'running')) return null;
  const streaming = await streamingReplicas(leader.pgPort);
  const others = cluster.nodes.filter((n) => n !== leader).map((n) => n.name);
  return others.every((name) => streaming.includes(name)) ? leader : null;
}

export async function waitHealthy(
  cluster: BenchCluster,
  timeoutMs: number,
  expected?: BenchNode,
  intervalMs = 100,
): Promise<{ leader: BenchNode; at: number }> {
  const leader = await pollUntil(() => healthyLeader(cluster, expected), timeoutMs, intervalMs);
  if (!leader) throw new Error(`${cluster.label}: not healthy within ${timeoutMs} ms`);
  return { leader, at: now() };
}
