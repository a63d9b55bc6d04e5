import { ClusterModel, NODE_NAMES } from './model';
import { Violation } from './model-types';

/**
 * 16. A hung server is ended (issue 34; `postgres_unresponsive_timeout`): on a settled cluster (invariant 4's
 * fixpoint), outside maintenance mode, no node whose agent runs keeps a PostgreSQL that answers nothing. Availability
 * (6) alone cannot see it: a hung primary accepts nothing, yet its agent's status still says a primary runs there,
 * and the leader race passes nobody while a primary answers (the reference's "Primary is still alive"), so a cluster
 * that keeps one settles with no member that may win. The model's hang (`pgHang`) strikes the lock holder's primary;
 * searches take it only when they name it.
 */
export function checkHungEnded(c: ClusterModel): Violation | null {
  if (c.pause) return null;
  const hung = c.nodes.findIndex((n) => n.pg === 'hung' && n.agent === 'up');
  if (hung < 0) return null;
  return {
    invariant: 'unresponsive',
    message: `the cluster settled with ${NODE_NAMES[hung]}'s PostgreSQL answering nothing while its agent runs (${c.leaderKey === hung ? 'holding' : c.leaderKey < 0 ? 'nobody holds' : `${NODE_NAMES[c.leaderKey]} holds`} the leader key)`,
  };
}
