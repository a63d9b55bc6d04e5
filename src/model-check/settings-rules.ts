import { Promotion, Violation } from './model-types';
import { ClusterModel, NODE_NAMES } from './model';
import { safeMembers } from './snapshot';
import { clusterTimeline } from './timeline-rule';

/**
 * The rules of the settings a search may turn on (model.ts ModelSettings), each judged only where its
 * setting is on: the mutation run's scenarios turn them on one at a time (issue 34, part 3).
 */

/**
 * 14b. `check_timeline` (Patroni's): a member whose timeline is behind the cluster's (one past `/history`'s
 * last entry) is no candidate: it never wins the race, and a leader hands a switchover only to a member on
 * a timeline no older than its own. Judged on every promotion but a manual failover's (no leader named:
 * the operator's override, which the race lets through whatever the timeline) and a paused cluster's.
 */
export function checkTimelineSetting(before: ClusterModel, p: Promotion): Violation | null {
  if (!before.settings?.checkTimeline || p.paused || p.forced) return null;
  const own = before.nodes[p.node].timeline;
  const timeline = clusterTimeline(before);
  if (own >= timeline) return null;
  return {
    invariant: 'timeline',
    message: `${NODE_NAMES[p.node]} promoted from timeline ${own} although the cluster is on timeline ${timeline} and check_timeline is on`,
  };
}

/** A member check_timeline bars from the race (availability.ts counts it as no candidate). */
export function barredByTimeline(c: ClusterModel, i: number): boolean {
  return c.settings?.checkTimeline === true && c.nodes[i].timeline < clusterTimeline(c);
}

/**
 * 8b. The `nosync` tag: a member tagged nosync is never a synchronous standby: `/sync` never names it as a
 * standby and no running primary lists it in synchronous_standby_names (it may lead: `/sync`'s leader).
 */
export function checkNoSync(c: ClusterModel): Violation | null {
  const tagged = c.nodes.findIndex((n) => n.noSync);
  if (tagged < 0) return null;
  const name = NODE_NAMES[tagged];
  if (c.sync?.standbys.includes(tagged))
    return { invariant: 'sync', message: `/sync names ${name} a synchronous standby although it is tagged nosync` };
  for (const [i, n] of c.nodes.entries()) {
    if (i !== tagged && n.pg === 'running' && n.primary && safeMembers(n.standbyNames).includes(name))
      return {
        invariant: 'sync',
        message: `${NODE_NAMES[i]} lists ${name}, tagged nosync, in synchronous_standby_names ('${n.standbyNames}')`,
      };
  }
  return null;
}

/**
 * 15. `standby_cluster`: the whole cluster replicates from the remote primary, so no member accepts writes (a
 * primary here would fork its own history beside the remote's: a second primary for the clients that reach it).
 * Its leader is a standby leader, a replica that holds the key (availability.ts counts it as the leader).
 */
export function checkStandbyCluster(c: ClusterModel): Violation | null {
  if (!c.settings?.standbyCluster) return null;
  // As actions.ts acceptsWrites: running out of recovery and not shutting down.
  const i = c.nodes.findIndex((n) => n.pg === 'running' && n.primary && (n.op === 'none' || n.op === 'switchover'));
  if (i < 0) return null;
  return {
    invariant: 'lease',
    message: `${NODE_NAMES[i]} runs as a primary in a standby cluster (standby_cluster names the remote primary)`,
  };
}
