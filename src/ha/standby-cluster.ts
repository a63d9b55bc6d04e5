import { StandbyCluster } from '../config/standby-cluster-config';
import { UpstreamNode } from '../postgresql/postgres.port';
import { HaSnapshot } from './cluster-snapshot';
import { HaAction } from './decision';

/** The remote of an archive-only standby cluster: no address to stream from, WAL comes by restore_command alone. */
export const REMOTE_ARCHIVE = 'remote archive';

/**
 * The remote primary a standby cluster's leader follows, as an upstream node. Its name says where it
 * is, so a change of `standby_cluster.host` or `port` is a change of upstream (recorded). An
 * archive-only standby cluster's remote has no host: its leader restores WAL with restore_command.
 */
export function remotePrimary(standby: StandbyCluster | null): UpstreamNode | null {
  if (!standby) return null;
  if (!standby.host) return { name: REMOTE_ARCHIVE, host: '', port: 0 };
  return { name: `remote ${standby.host}:${standby.port}`, host: standby.host, port: standby.port };
}

/** A standby leader streams from the remote primary and says it is the standby leader. */
export function followRemote(s: HaSnapshot, remote: UpstreamNode): HaAction[] {
  const actions: HaAction[] = [];
  if (s.local.upstream !== remote.name) actions.push({ type: 'follow', upstream: remote });
  if (s.local.role !== 'standby_leader') actions.push({ type: 'becomeStandbyLeader' });
  return actions;
}
