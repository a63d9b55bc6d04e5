import { ClusterView } from '../../dcs/dcs.port';
import { FailsafeCall } from './failsafe-caller';
import { replicatefromOf } from '../slot-plan';

/**
 * While the DCS is down, a replica's view of the cluster for its slots (the reference's
 * `Failsafe.update_cluster`): the last view it read, with the leader whose failsafe call it accepted
 * and that leader's slot positions in place of `/status`'s. Null without both.
 */
export function failsafeView(last: ClusterView | null, call: FailsafeCall | null): ClusterView | null {
  if (!last || !call?.slots) return null;
  return {
    ...last,
    leader: { value: call.name, modRevision: last.leader?.modRevision ?? '0' },
    status: {
      value: { ...(last.status?.value ?? {}), slots: call.slots },
      modRevision: last.status?.modRevision ?? '0',
    },
  };
}

/**
 * While the DCS is down, the failsafe leader's view of the cluster for its own slots (the reference's
 * `Failsafe.update_cluster` on the primary): the last view it read, where each member that cascades
 * from another member stands at the WAL position it answered the last failsafe call with. The leader's
 * slot for such a member is idle (its WAL flows through another node), so that report is the only way
 * it moves forward while no member key can be read. Null without a view.
 */
export function failsafeLeaderView(last: ClusterView | null, positions: Record<string, number>): ClusterView | null {
  if (!last) return null;
  const members = last.members.map((member) => {
    const reported = positions[member.name];
    if (!replicatefromOf(member.data.tags) || reported === undefined) return member;
    return { ...member, data: { ...member.data, xlog_location: reported } };
  });
  return { ...last, members };
}
