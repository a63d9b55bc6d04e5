import { Action, Violation } from './model-types';
import { ClusterModel, NODE_NAMES } from './model';

/** The cluster's timeline as the agent reads `/history` (cluster-snapshot.ts): one past its last entry, 1 before any promotion. */
export function clusterTimeline(c: ClusterModel): number {
  const last = c.history[c.history.length - 1];
  return last ? last[0] + 1 : 1;
}

/**
 * 14. No promotion is discarded by an old primary (Patroni 4.1's `is_healthiest_node`: "My timeline %s is behind
 * last known cluster timeline %s"): a running primary whose agent comes back to a free leader key after another
 * member promoted past its timeline must not take the key, else the cluster goes back to the old timeline and every
 * commit of the newer one is gone for its clients (the members on it must be rewound). Judged on the HA cycle in
 * which a running primary without the key takes it; while paused the reference lets a running primary keep
 * leading whatever its timeline (the operator decides), so a paused cluster is not judged.
 */
export function checkTimelineTakeover(before: ClusterModel, after: ClusterModel, action: Action): Violation | null {
  if (action.kind !== 'cycle' || after.pause) return null;
  const i = action.node;
  const was = before.nodes[i];
  if (before.leaderKey === i || after.leaderKey !== i || was.pg !== 'running' || !was.primary) return null;
  const timeline = clusterTimeline(before);
  if (was.timeline >= timeline) return null;
  return {
    invariant: 'timeline',
    message: `${NODE_NAMES[i]}, a running primary on timeline ${was.timeline}, took the leader key although the cluster is on timeline ${timeline}: the promotion past it is discarded`,
  };
}
