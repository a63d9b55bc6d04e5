import { EffectiveDynamicConfig } from '../../config/config.types';
import { ClusterView, SyncState } from '../../dcs/dcs.port';

/** Names in a comma-separated list (`sync_standby`), trimmed, empty ones dropped. */
export function namesIn(list: string | null | undefined): string[] {
  return (list ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name.length > 0);
}

/** The standbys `/sync` names (the reference's `voters`): none while the key has no leader. */
export function syncStandbysOf(sync: SyncState | null | undefined): string[] {
  return sync?.leader ? namesIn(sync.sync_standby) : [];
}

/** Whether `/sync` names `name` as a synchronous standby, or as its leader with `includeLeader`; case-insensitive, as the reference. */
export function syncNames(
  sync: SyncState | null | undefined,
  name: string | null | undefined,
  includeLeader = false,
): boolean {
  if (!name || !sync?.leader) return false;
  const wanted = name.toLowerCase();
  if (includeLeader && sync.leader.toLowerCase() === wanted) return true;
  return syncStandbysOf(sync).some((standby) => standby.toLowerCase() === wanted);
}

/** The `/sync` value as the reference writes it: keys in its order, standbys sorted, null for none. */
export function syncKeyValue(leader: string, standbys: Iterable<string>, quorum = 0): SyncState {
  const sorted = [...new Set(standbys)].sort();
  return { leader, quorum, sync_standby: sorted.length > 0 ? sorted.join(',') : null };
}

/** Synchronous replication is asked for in `/config` (`synchronous_mode` on or quorum). */
export function synchronousModeRequested(config: EffectiveDynamicConfig): boolean {
  return config.synchronous_mode !== 'off';
}

/**
 * Synchronous replication is asked for and in force: a leader has written its name into `/sync`
 * (the reference's `sync_mode_is_active`). Until then nobody's eligibility depends on `/sync`.
 */
export function synchronousModeActive(config: EffectiveDynamicConfig, cluster: ClusterView | null): boolean {
  return synchronousModeRequested(config) && Boolean(cluster?.sync?.value.leader);
}

/** Quorum commit asked for and in force. */
export function quorumModeActive(config: EffectiveDynamicConfig, cluster: ClusterView | null): boolean {
  return config.synchronous_mode === 'quorum' && synchronousModeActive(config, cluster);
}

/** The `quorum` field of `/sync`: how many of its standbys a candidate must hear from in quorum mode. */
export function syncQuorumOf(sync: SyncState | null | undefined): number {
  const quorum = sync?.leader ? Number(sync.quorum ?? 0) : 0;
  return Number.isInteger(quorum) && quorum > 0 ? quorum : 0;
}
