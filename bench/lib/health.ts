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
  const verdict = await healthVerdict(cluster, expected);
  return typeof verdict === 'string' ? null : verdict;
}

/** The healthy leader, or why the cluster is not healthy (for the bench's report of a wait that timed out). */
async function healthVerdict(cluster: BenchCluster, expected?: BenchNode): Promise<BenchNode | string> {
  const leaders = await primaries(cluster, 500);
  if (leaders.length !== 1) return `${leaders.length} nodes answer 200 on /primary`;
  const leader = leaders[0];
  if (expected && leader !== expected) return `${leader.name} answers 200 on /primary, not ${expected.name}`;
  const states = await Promise.all(cluster.nodes.map((n) => status(cluster, n, 500)));
  const notRunning = cluster.nodes
    .map((node, i) => ({ node, state: states[i] ? String(states[i]?.state) : 'no answer' }))
    .filter(({ state }) => state !== 'running');
  if (notRunning.length > 0)
    return `not running: ${notRunning.map(({ node, state }) => `${node.name} (${state})`).join(', ')}`;
  const streaming = await streamingReplicas(leader.pgPort).catch((error: Error) => error);
  if (streaming instanceof Error) return `pg_stat_replication of ${leader.name}: ${streaming.message}`;
  const notStreaming = cluster.nodes.filter((n) => n !== leader && !streaming.includes(n.name));
  return notStreaming.length === 0
    ? leader
    : `not streaming from ${leader.name}: ${notStreaming.map((n) => n.name).join(', ')}`;
}

export async function waitHealthy(
  cluster: BenchCluster,
  timeoutMs: number,
  expected?: BenchNode,
  intervalMs = 100,
): Promise<{ leader: BenchNode; at: number }> {
  let lastVerdict = 'not checked';
  const leader = await pollUntil(
    async () => {
      const verdict = await healthVerdict(cluster, expected).catch((error: Error) => error.message);
      if (typeof verdict !== 'string') return verdict;
      lastVerdict = verdict;
      return null;
    },
    timeoutMs,
    intervalMs,
  );
  if (!leader) throw new Error(`${cluster.label}: not healthy within ${timeoutMs} ms (last: ${lastVerdict})`);
  return { leader, at: now() };
}
