/**
 * Failsafe mode in the model (issue 34, part 2): what the agent does around the real decide() when
 * `failsafe_mode` is on, as failsafe-rounds.ts and HaNode.acceptFailsafe do it. The decisions (hold or
 * demote on the answers, a member that accepted a leader does not race) stay the real code's.
 */
import { HaSnapshot } from '../ha/cluster-snapshot';
import { ClusterModel, NODE_NAMES, NodeModel, reaches } from './model';
import { EPOCH } from './snapshot';

/** The running server is out of recovery (the sample says so): a leader failsafe may keep, a member that refuses. */
export function runsAsPrimary(n: NodeModel): boolean {
  return n.pg === 'running' && n.op !== 'start' && n.primary;
}

/** `/failsafe` as publishFailsafe writes it: every member the read shows, and the lock holder itself. */
export function failsafeMaskOf(s: HaSnapshot, i: number): number {
  let mask = 1 << i;
  for (const member of s.cluster?.members ?? []) {
    const j = NODE_NAMES.indexOf(member.name as (typeof NODE_NAMES)[number]);
    if (j >= 0) mask |= 1 << j;
  }
  return mask;
}

/**
 * One failsafe round of leader i (failsafeRound): each other member named in `/failsafe` is called; it
 * accepts when it answers (its agent runs, neither side is cut off from its peers) and does not run as a
 * primary itself (HaNode.acceptFailsafe answers 500 then). A member that accepts does not race for a ttl
 * from now, whatever the others answer. Accepted by all, the leader holds for a ttl from the round's start.
 */
export function failsafeRound(
  c: ClusterModel,
  i: number,
  members: Record<string, string>,
): { accepted: boolean; validUntil: number; refusals: string[] } {
  const refusals: string[] = [];
  for (const member of Object.keys(members)) {
    const j = NODE_NAMES.indexOf(member as (typeof NODE_NAMES)[number]);
    if (j === i) continue;
    if (j < 0 || !reaches(c, i, j)) {
      refusals.push(`failsafe call to ${member} not accepted: timeout`);
      continue;
    }
    const n = c.nodes[j];
    if (runsAsPrimary(n)) {
      refusals.push(`failsafe call to ${member} not accepted: 500 Running as a leader`);
      continue;
    }
    n.acceptedLeader = i;
    n.acceptedLeft = c.ttl * 1000;
  }
  return { accepted: refusals.length === 0, validUntil: EPOCH + c.ttl * 1000, refusals };
}
