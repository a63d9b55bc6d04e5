import { ClusterView } from '../dcs/dcs.port';
import { HaSnapshot, isTruthyTag } from './cluster-snapshot';
import { HaAction } from './decision';

/**
 * A load balancer's read pool holds the nodes answering 200 on `/replica`. A node about to become
 * primary leaves it first (503 on the replica checks), and promotes only once a load balancer
 * checking at its usual interval has seen that: no read routed to the read port reaches a primary.
 */

/** Why a running replica answers 503 on the replica checks although it is healthy. */
export type ReadPoolWithdrawal = 'holds the leader lock' | 'named candidate of a due switchover or failover';

/** This node is the named candidate of a switchover or failover that is due now. */
export function isDueCandidate(cluster: ClusterView | null, name: string, now: number): boolean {
  const request = cluster?.failover?.value;
  if (!request || request.member !== name) return false;
  return !request.scheduled_at || Date.parse(request.scheduled_at) <= now;
}

/** Whether (and why) a node is kept out of the read pool because it is about to be primary. */
export function readPoolWithdrawal(
  leadership: 'leader' | 'follower',
  cluster: ClusterView | null,
  name: string,
  now: number,
): ReadPoolWithdrawal | null {
  if (leadership === 'leader') return 'holds the leader lock';
  if (isDueCandidate(cluster, name, now)) return 'named candidate of a due switchover or failover';
  return null;
}

/**
 * How long a replica that holds the lock still waits before promoting: what is left of
 * `load_balancer_drain_ms` since it left the read pool (`withdrawnAt`). A switchover candidate
 * left it when the request was written, and the old leader drained meanwhile: nothing is left. A
 * failover candidate left it when it took the lock: the whole drain. A node never in a read pool
 * (`noloadbalance`) does not wait.
 */
export function promotionDrainMs(
  drainMs: number,
  withdrawnAt: number | null,
  now: number,
  noLoadBalance: boolean,
): number {
  if (noLoadBalance || drainMs <= 0) return 0;
  if (withdrawnAt === null) return drainMs;
  return Math.max(0, Math.min(drainMs, withdrawnAt + drainMs - now));
}

/** The promotion decide() returns: after what is left of the drain for this node. */
export function promoteAfterDrain(s: HaSnapshot): HaAction {
  const { local, config } = s;
  return {
    type: 'promote',
    drainMs: promotionDrainMs(
      config.load_balancer_drain_ms,
      local.readPoolWithdrawnAt,
      s.now,
      isTruthyTag(local.tags.noloadbalance),
    ),
  };
}
