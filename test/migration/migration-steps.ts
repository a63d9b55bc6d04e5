import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { waitFor } from '../../scripts/lib/wait-for';
import { MixedCluster } from './lib/mixed-cluster';
import { AgentKind, MixedNode } from './lib/mixed-node';

const run = promisify(execFile);

/** The interpreter Debian's patroni runs on (its shebang), which imports the reference's package. */
const PATRONI_PYTHON = readFileSync(process.env.PATRONI_BINARY ?? '/usr/bin/patroni', 'utf8')
  .split('\n')[0]
  .replace(/^#!\s*/, '')
  .split(' ')[0];

/** Figures of one run, printed at the end (issue 17: "measured again"). */
export const figures: Record<string, number | string> = {};

export function record(name: string, ms: number): number {
  figures[name] = `${(ms / 1000).toFixed(2)} s`;
  return ms;
}

/**
 * Replaces `node`'s agent on the same data directory and configuration file: SIGTERM to the old agent
 * (it stops PostgreSQL), then the other agent. Resolves with the ms from the new agent's start until its
 * node streams from the leader.
 */
export async function swapAgent(cluster: MixedCluster, node: MixedNode, to: AgentKind): Promise<number> {
  const leaderName = await cluster.leaderName();
  if (!leaderName || leaderName === node.name)
    throw new Error(`swap ${node.name}: not a replica (leader ${leaderName})`);
  await node.stop();
  await node.clearLeftovers();
  const started = performance.now();
  node.start(to);
  return cluster.waitUntilStreaming(node, cluster.node(leaderName), started, 90_000);
}

/**
 * patronictl's switchover to `candidate`, timed from patronictl's start: until the candidate is the
 * writable lock holder, and until every other running member streams from it.
 */
export async function switchover(
  cluster: MixedCluster,
  candidate: MixedNode,
  scheduledAt?: string,
): Promise<{ primaryMs: number; allStreamingMs: number }> {
  const leader = await cluster.leaderName();
  const started = performance.now();
  await cluster.patronictl(
    'switchover',
    cluster.scope,
    '--leader',
    leader ?? '',
    '--candidate',
    candidate.name,
    '--force',
    ...(scheduledAt ? ['--scheduled', scheduledAt] : []),
  );
  await waitFor(async () => (await cluster.leaderName()) === candidate.name && (await candidate.writable()), {
    timeoutMs: scheduledAt ? 60_000 : 30_000,
    intervalMs: 50,
    description: `${candidate.name} primary after the switchover`,
  });
  const primaryMs = performance.now() - started;
  await cluster.waitForHealthy(60_000, `every member streaming from ${candidate.name}`);
  return { primaryMs, allStreamingMs: performance.now() - started };
}

/**
 * What a Patroni 3.0.2 peer makes of a member key, computed by the reference's own classes
 * (patroni.dcs.Member, Leader, Cluster) on the stored value: the version it parses, whether it trusts the
 * leader's `checkpoint_after_promote` (True/False) or runs a CHECKPOINT on the leader itself (None), and
 * whether the cluster's lowest version keeps it writing the legacy `/optime/leader` key.
 */
export async function asPatroniReadsIt(
  leaderName: string,
  leaderKey: string,
  memberKeys: Record<string, string>,
): Promise<{
  version: number[] | null;
  checkpointAfterPromote: boolean | null;
  writesLegacyOptime: boolean;
}> {
  const script = `
import json, sys
from patroni.dcs import Member, Leader
given = json.loads(sys.stdin.read())
leader = Leader(1, '', Member.from_node(1, given['name'], '', given['leader']))
members = [Member.from_node(1, name, '', value) for name, value in given['members'].items()]
versions = sorted(filter(None, [m.version for m in members]))
low = versions[0] if versions else None
print(json.dumps({'version': leader.member.version, 'checkpointAfterPromote': leader.checkpoint_after_promote,
                  'writesLegacyOptime': bool(low and low < (2, 1, 0))}))
`;
  const child = run(PATRONI_PYTHON, ['-c', script], { timeout: 20_000 });
  child.child.stdin?.end(JSON.stringify({ name: leaderName, leader: leaderKey, members: memberKeys }));
  return JSON.parse((await child).stdout) as never;
}

/** The cluster events a Stator node serves, of one type. */
export async function statorEvents(
  node: MixedNode,
  type: string,
): Promise<{ node: string; data: Record<string, unknown> }[]> {
  const response = await fetch(`${node.apiUrl}/events?type=${encodeURIComponent(type)}&limit=1000`, {
    signal: AbortSignal.timeout(5000),
  });
  const body = (await response.json()) as unknown;
  const events = Array.isArray(body) ? body : ((body as { events?: unknown[] }).events ?? []);
  return events as never;
}

/** An ISO time `seconds` from now, with offset, as patronictl's `--scheduled` takes it. */
export function inSeconds(seconds: number): string {
  return new Date(Date.now() + seconds * 1000).toISOString().replace('Z', '+00:00');
}
