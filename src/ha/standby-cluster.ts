import { StandbyCluster } from '../config/standby-cluster-config';
import { UpstreamNode } from '../postgresql/postgres.port';
import { HaSnapshot } from './cluster-snapshot';
import { HaAction } from './decision';

/**
 * The remote primary a standby cluster's leader streams from, as an upstream node. Its name says
 * where it is, so a change of `standby_cluster.host` or `port` is a change of upstream (recorded).
 */
export function remotePrimary(standby: StandbyCluster | null): UpstreamNode | null {
  if (!standby?.host) return null;
  return { name: `remote ${standby.host}:${standby.port}`, host: standby.host, port: standby.port };
}

/** A standby leader streams from the remote primary and says it is the standby leader. */
export function followRemote(s: HaSnapshot, remote: UpstreamNode): HaAction[] {
  const actions: HaAction[] = [];
  if (s.local.upstream !== remote.name) actions.push({ type: 'follow', upstream: remote });
  if (s.local.role !== 'standby_leader') actions.push({ type: 'becomeStandbyLeader' });
  return actions;
}
