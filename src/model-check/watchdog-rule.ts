import { acceptsWrites } from './actions';
import { Promotion, Violation } from './model-types';
import { ClusterModel, NODE_NAMES } from './model';

/**
 * 10. The watchdog rule (issue 34, part 3; Patroni's with watchdog mode `required`): a node whose
 * watchdog cannot be activated is no candidate, a manual failover's included, and never keeps the
 * leader key nor a primary. Outside maintenance mode (paused, PostgreSQL is the operator's). The
 * model runs it with `--watchdog` (every node `required`), where a node's watchdog may fail.
 */
export function checkWatchdogPromotion(before: ClusterModel, p: Promotion): Violation | null {
  if (p.paused || !before.nodes[p.node].watchdogFailed) return null;
  return {
    invariant: 'watchdog',
    message: `${NODE_NAMES[p.node]} promoted although its watchdog (mode required) cannot be activated`,
  };
}

/**
 * On a settled cluster (invariant 4's fixpoint): no node whose watchdog cannot be activated holds the
 * leader key or runs a primary while its agent runs and reaches the DCS (the check is the lock
 * holder's; a leader failsafe mode keeps while the DCS is down stays, as the reference's).
 */
export function checkWatchdogSettled(c: ClusterModel): Violation | null {
  if (c.pause || !c.quorum) return null;
  for (const [i, n] of c.nodes.entries()) {
    if (!n.watchdogFailed || n.agent !== 'up' || n.dcsCut) continue;
    if (c.leaderKey === i || acceptsWrites(c, i))
      return {
        invariant: 'watchdog',
        message: `the cluster settled with ${NODE_NAMES[i]} ${c.leaderKey === i ? 'holding the leader key' : 'running a primary'} although its watchdog (mode required) cannot be activated`,
      };
  }
  return null;
}
