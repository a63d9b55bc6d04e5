import { EffectiveDynamicConfig } from '../../config/config.types';
import { ClusterView, Member } from '../../dcs/dcs.port';
import { PostgresSample, ReplicationConnection } from '../../postgresql/postgres.port';
import { STRICT_PLACEHOLDER } from '../../postgresql/standby-names';
import { downstreamMembers } from '../cascade';
import { isNoFailover, isTruthyTag } from '../cluster-snapshot';
import { otherSiteCount, quorumCountForSites, siteRepresentatives } from './site-placement';

/** A standby streaming from the leader that may be made synchronous. */
export interface SyncCandidate {
  name: string;
  syncState: string;
  /** The position that counts for synchronous_commit: written, flushed or replayed. */
  lsn: number;
  noFailover: boolean;
  syncPriority: number;
  /** Its member key's `site`, if any. */
  site?: string;
}

/** What the leader can make of its standbys this cycle. */
export interface SyncCandidates {
  /** The standbys to list in synchronous_standby_names, best first (at most synchronous_node_count in priority mode). */
  active: string[];
  /** Those of `active` that PostgreSQL reports synchronous and that have caught up since they were listed. */
  confirmed: string[];
  /** How many of the sites `synchronous_site_count` requires have no eligible standby (0: the rule is met or off). */
  sitesMissing: number;
  /** Quorum mode: the `N` of `ANY N` wanted, raised so that any N of `active` reach the required sites. */
  syncWanted: number;
}

/** `nosync`, or a `sync_priority` of 0 or less: never a synchronous standby. */
export function isNoSync(tags: Record<string, unknown> | undefined): boolean {
  if (!tags) return false;
  if (tags.nosync !== undefined) return isTruthyTag(tags.nosync);
  return tags.sync_priority !== undefined && syncPriority(tags) <= 0;
}

function syncPriority(tags: Record<string, unknown> | undefined): number {
  const priority = Number(tags?.sync_priority ?? 1);
  return Number.isFinite(priority) ? priority : 1;
}

/** The column of pg_stat_replication a commit waits for under `synchronous_commit`. */
function committedPosition(connection: ReplicationConnection, synchronousCommit: string): number | null {
  if (synchronousCommit === 'remote_apply') return connection.replay_lsn;
  if (synchronousCommit === 'remote_write') return connection.write_lsn;
  return connection.flush_lsn;
}

/**
 * The standbys that may be synchronous (reference `_ReplicaList`): streaming from this leader (not
 * cascading), known running in the DCS, not `nosync`; the higher `sync_priority`, already `sync`, and
 * further ahead first, then those that may fail over before `nofailover` ones.
 */
export function syncCandidates(leaderName: string, cluster: ClusterView, sample: PostgresSample): SyncCandidate[] {
  const streamingFromMe = new Set(downstreamMembers(cluster, leaderName, true).map((name) => name.toLowerCase()));
  const members = new Map<string, Member>();
  for (const member of cluster.members) {
    const key = member.name.toLowerCase();
    if (member.data.state === 'running' && !isNoSync(member.data.tags) && streamingFromMe.has(key))
      members.set(key, member);
  }
  const seen = new Set<string>();
  const candidates: SyncCandidate[] = [];
  for (const connection of sample.replication) {
    const key = connection.application_name.toLowerCase();
    const member = members.get(key);
    const lsn = committedPosition(connection, sample.synchronousCommit);
    if (!member || lsn === null || seen.has(key)) continue;
    seen.add(key);
    candidates.push({
      name: member.name,
      syncState: connection.sync_state,
      lsn,
      noFailover: isNoFailover(member.data.tags),
      syncPriority: syncPriority(member.data.tags),
      ...(member.data.site ? { site: member.data.site } : {}),
    });
  }
  candidates.sort((a, b) => b.syncPriority - a.syncPriority || b.syncState.localeCompare(a.syncState) || b.lsn - a.lsn);
  // Stable: promotable standbys first, the order above kept within each group.
  return [...candidates.filter((c) => !c.noFailover), ...candidates.filter((c) => c.noFailover)];
}

/** Where each standby streaming from this server stands, in the column synchronous_commit waits for. */
export interface StandbyPosition {
  name: string;
  lsn: number;
}

/**
 * Every walsender's standby, member key or not: a listed standby whose key expired (its agent stalled) still
 * acknowledges commits while its PostgreSQL streams, so the bound on what was acknowledged must count it.
 */
export function streamingPositions(sample: PostgresSample): StandbyPosition[] {
  const positions: StandbyPosition[] = [];
  for (const connection of sample.replication) {
    const lsn = committedPosition(connection, sample.synchronousCommit);
    if (lsn !== null) positions.push({ name: connection.application_name, lsn });
  }
  return positions;
}

/**
 * In quorum mode (`ANY n`) a commit returns once `n` listed standbys hold it: the n-th highest
 * position among them bounds every acknowledged commit. A standby at or past it holds them all.
 */
export function quorumAcknowledgedPosition(standbys: StandbyPosition[], listed: string[], count: number): number {
  const names = new Set(listed.map((name) => name.toLowerCase()));
  const positions = standbys
    .filter((s) => names.has(s.name.toLowerCase()))
    .map((s) => s.lsn)
    .sort((a, b) => b - a);
  return count > 0 && positions.length >= count ? positions[count - 1] : 0;
}

/** The leader's own `site`, from its member key: undefined without one (or without the key). */
export function leaderSiteOf(cluster: ClusterView, leaderName: string): string | undefined {
  return (
    cluster.members.find((member) => member.name.toLowerCase() === leaderName.toLowerCase())?.data.site || undefined
  );
}

/**
 * Picks the synchronous standbys (reference `SyncHandler.current_state`): within
 * `maximum_lag_on_syncnode` of the most advanced standby (of the leader itself when there is only
 * one), up to `synchronous_node_count` in priority mode; every eligible one in quorum mode, where
 * `nofailover` standbys only fill up to the count. With `synchronous_site_count`, priority mode lists
 * the best standby of each required other site first (and at least that many standbys), quorum mode
 * raises its `ANY N` (site-placement.ts); a rule that cannot be met under `synchronous_mode_strict`
 * lists the placeholder that no standby answers to, so that commits wait rather than stay in the site.
 */
export function pickSynchronous(
  candidates: SyncCandidate[],
  ready: ReadonlySet<string>,
  leaderFlushLsn: number,
  config: Pick<
    EffectiveDynamicConfig,
    | 'synchronous_mode'
    | 'synchronous_node_count'
    | 'maximum_lag_on_syncnode'
    | 'synchronous_site_count'
    | 'synchronous_mode_strict'
  >,
  acknowledgedUpTo = 0,
  leaderSite?: string,
): SyncCandidates {
  const quorum = config.synchronous_mode === 'quorum';
  const maxLsn = candidates.length > 1 ? Math.max(...candidates.map((c) => c.lsn)) : leaderFlushLsn;
  const withinLag = candidates.filter(
    (c) => !(config.maximum_lag_on_syncnode > 0 && maxLsn - c.lsn > config.maximum_lag_on_syncnode),
  );
  const requiredSites = config.synchronous_site_count ?? 0;
  let ordered = withinLag;
  let sitesMissing = 0;
  if (requiredSites > 0 && !quorum) {
    const { representatives, missing } = siteRepresentatives(withinLag, leaderSite, requiredSites);
    ordered = [...representatives, ...withinLag.filter((c) => !representatives.includes(c))];
    sitesMissing = missing;
  }
  const count = quorum ? config.synchronous_node_count : Math.max(config.synchronous_node_count, requiredSites);
  const active: string[] = [];
  const confirmed: string[] = [];
  const listed: SyncCandidate[] = [];
  for (const candidate of ordered) {
    const isReady = ready.has(candidate.name.toLowerCase());
    if (quorum) {
      // A nofailover standby only fills up the count, unless it is the one to reach a site the rule still needs.
      const reachesNeededSite =
        requiredSites > 0 &&
        otherSiteCount(listed, leaderSite) < requiredSites &&
        otherSiteCount([...listed, candidate], leaderSite) > otherSiteCount(listed, leaderSite);
      if (candidate.noFailover && active.length >= config.synchronous_node_count && !reachesNeededSite) continue;
      active.push(candidate.name);
      listed.push(candidate);
      // ANY n: a listed standby need not have acknowledged the latest commits; it counts once it holds them.
      if (isReady && candidate.lsn >= acknowledgedUpTo) confirmed.push(candidate.name);
    } else {
      active.push(candidate.name);
      if (candidate.syncState === 'sync' && isReady) confirmed.push(candidate.name);
      if (active.length >= count) break;
    }
  }
  let syncWanted = config.synchronous_node_count;
  if (requiredSites > 0 && quorum) {
    const forSites = quorumCountForSites(listed, leaderSite, requiredSites);
    if (forSites === null) sitesMissing = requiredSites - otherSiteCount(listed, leaderSite);
    else syncWanted = Math.max(syncWanted, forSites);
  }
  // Strict priority mode: a standby nobody is waits in the list for the missing site (with none listed, planPriority holds on its own).
  if (sitesMissing > 0 && !quorum && config.synchronous_mode_strict && active.length > 0)
    active.push(STRICT_PLACEHOLDER);
  return { active, confirmed, sitesMissing, syncWanted };
}
