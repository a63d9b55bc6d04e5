import { ClusterView } from '../../dcs/dcs.port';
import { FailsafeCall } from './failsafe-caller';

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
    status: { value: { ...(last.status?.value ?? {}), slots: call.slots }, modRevision: last.status?.modRevision ?? '0' },
  };
}
