import { ClusterView } from '../../dcs/dcs.port';
import type { NodeActors } from '../node-actors';
import { memberKeyOf } from '../node-member-key';

/**
 * One failsafe round: every other member in `/failsafe` is asked to accept this leader (2 s each, in
 * parallel). Accepted by all, the leader may stay primary for a ttl from the round's start.
 */
export async function failsafeRound(
  node: NodeActors,
  members: Record<string, string>,
): Promise<{ accepted: boolean; validUntil: number; refusals: string[] }> {
  const startedAt = node.deps.clock.monotonic();
  const { conn_url, api_url } = memberKeyOf(node);
  const others = Object.entries(members).filter(([name]) => name !== node.name);
  // The slot positions go with the call, so that the replicas keep their copies in step meanwhile (as the reference).
  const sample = node.sampler.sample;
  const slots =
    sample && node.cluster
      ? await node.leaderDuties.slotPositions(node.cluster, node.dynamic, sample.walPosition).catch(() => undefined)
      : undefined;
  const call = { name: node.name, conn_url, api_url, ...(slots && Object.keys(slots).length > 0 ? { slots } : {}) };
  const answers = await Promise.all(
    others.map(async ([name, url]) => ({ name, ...(await node.callFailsafe(url, call)) })),
  );
  const refusals = answers
    .filter((answer) => !answer.accepted)
    .map((answer) => `failsafe call to ${answer.name} not accepted: ${answer.answer}`);
  if (refusals.length === 0) node.failsafe.roundAccepted(startedAt, answers);
  else node.failsafe.leaderEnded();
  return { accepted: refusals.length === 0, validUntil: startedAt + node.dynamic.ttl * 1000, refusals };
}

/** The lock holder keeps `/failsafe` naming every member's API while failsafe mode is on, and removes it once off. */
export async function publishFailsafe(node: NodeActors, cluster: ClusterView | null): Promise<void> {
  if (!cluster) return;
  const stored = cluster.failsafe?.value ?? null;
  if (!node.dynamic.failsafe_mode) {
    if (stored) await node.deps.dcs.setFailsafe(null);
    node.remember({ type: 'FAILSAFE_MEMBERS_KNOWN', members: null });
    return;
  }
  const wanted: Record<string, string> = {};
  for (const member of cluster.members) if (member.data.api_url) wanted[member.name] = member.data.api_url;
  wanted[node.name] = memberKeyOf(node).api_url;
  if (JSON.stringify(wanted) === JSON.stringify(stored)) return;
  await node.deps.dcs.setFailsafe(wanted);
  node.remember({ type: 'FAILSAFE_MEMBERS_KNOWN', members: wanted });
}
