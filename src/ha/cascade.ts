import { NodeTags } from '../config/config.types';
import { ClusterView, Member } from '../dcs/dcs.port';
import { isTruthyTag } from './cluster-snapshot';

/**
 * Cascading replication as the reference arranges it (`replicatefrom`, `nostream` tags).
 *
 * A replica streams from the member its `replicatefrom` tag names while that member is running and
 * is not itself; otherwise (the member failed, left, or was never there) from the leader, so a
 * broken cascade re-points by itself. A `nostream` replica streams from nobody (it replays WAL from
 * its restore_command only).
 */
export function nodeToFollow(
  cluster: ClusterView,
  self: { name: string; tags: NodeTags },
  leaderName: string,
): Member | undefined {
  if (isTruthyTag(self.tags.nostream)) return undefined;
  const leader = cluster.members.find((m) => m.name === leaderName);
  const wanted = typeof self.tags.replicatefrom === 'string' ? self.tags.replicatefrom : null;
  if (!wanted || wanted === self.name || wanted === leaderName) return leader;
  const intermediate = cluster.members.find((m) => m.name === wanted);
  return intermediate && intermediate.data.state === 'running' ? intermediate : leader;
}

/**
 * The members that stream from `self`, each of which needs a physical slot there: on the leader,
 * every other member but those that cascade from a running member; on a replica, the members
 * whose `replicatefrom` names it. `nostream` members stream from nobody and get none.
 */
export function downstreamMembers(cluster: ClusterView, selfName: string, isLeader: boolean): string[] {
  // The same test as nodeToFollow's: a member cascading from one that is not running follows the leader.
  const running = (name: string) => cluster.members.some((m) => m.name === name && m.data.state === 'running');
  return cluster.members
    .filter((m) => m.name !== selfName && !isTruthyTag(m.data.tags?.nostream))
    .filter((m) => {
      const from = typeof m.data.tags?.replicatefrom === 'string' ? m.data.tags.replicatefrom : null;
      if (isLeader) return from === null || from === selfName || !running(from);
      return from === selfName && m.name !== cluster.leader?.value;
    })
    .map((m) => m.name);
}
