import { parseStandbyNames, StandbyNames, STRICT_PLACEHOLDER } from '../postgresql/standby-names';
import { hasLeader } from './availability';
import { ClusterModel, NODE_NAMES, strictMode } from './model';
import { MODEL_SITES } from './site-rule';
import { streamingFrom } from './snapshot';

/**
 * 7. Synchronous replication as the setting says (issue 34): once the cluster settled with a leader
 * in a synchronous mode, what a user reads matches `synchronous_node_count` (1 in the model):
 * - some standby streams from the leader and may be synchronous (agent running, member key live, not tagged nosync):
 *   synchronous_standby_names waits for one standby (no fewer: commits unprotected; no more: commits
 *   wait for more standbys than asked), lists only such standbys, and `/sync`
 *   names at least one of them, each of which PostgreSQL lists (a commit waits for it); in quorum
 *   mode every such standby is listed and named (`ANY 1` over all of them), but for `nofailover`
 *   ones, which only fill up to the count (as the reference's quorum mode);
 * - none: asynchronous mode's fallback empties synchronous_standby_names (commits must not hang
 *   waiting for nobody), strict mode keeps waiting for one.
 * With `synchronous_site_count` quorum mode's count rises for the sites (site-rule-settled.ts judges it); in
 * strict mode, while the streaming standbys miss a site the rule requires, the setting must hold commits: it
 * lists the placeholder for the missing site and waits for every name it lists (`FIRST n` over n names), the
 * placeholder among them, which never confirms (the reference's strict placeholder, docs/sites.md); quorum mode's
 * hold (synchronous_mode_strict in quorum mode) may keep listing standbys that no longer stream.
 * Judged on settled states only: on the way there a planner may take a transition at a time.
 */
export function checkSyncSettled(c: ClusterModel): { invariant: 'sync-settled'; message: string } | null {
  // A standby cluster (a search's setting) commits nothing of its own: its standby leader is a replica, nothing to wait for.
  if (c.mode === 'off' || !c.quorum || c.pause || c.failover || !hasLeader(c) || c.settings?.standbyCluster)
    return null;
  const leader = c.leaderKey;
  const n = c.nodes[leader];
  let listed: StandbyNames;
  try {
    listed = parseStandbyNames(n.standbyNames);
  } catch {
    return fail(`${NODE_NAMES[leader]}'s synchronous_standby_names '${n.standbyNames}' does not parse`);
  }
  const candidates = streamingFrom(c, leader).filter(
    (j) => c.nodes[j].member?.running && c.nodes[j].agent === 'up' && !c.nodes[j].noSync,
  );
  const names = new Set<string>(candidates.map((j) => NODE_NAMES[j]));
  const strict = strictMode(c);
  const shown = `synchronous_standby_names '${n.standbyNames}', /sync ${c.sync ? `${NODE_NAMES[c.sync.leader]}: ${c.sync.standbys.map((j) => NODE_NAMES[j]).join(',') || 'none'}` : 'absent'}`;
  if (candidates.length === 0) {
    if (!strict && listed.count > 0) return fail(`no standby can be synchronous, yet ${shown} makes commits wait`);
    if (strict && listed.count === 0)
      return fail(`strict mode without a synchronous standby lets commits through: ${shown}`);
    return null;
  }
  const syncNamed = c.sync && c.sync.leader === leader ? c.sync.standbys : [];
  const holdForSite = strict && sitesMissing(c, leader, candidates) > 0;
  const standbys = holdForSite ? listed.members.filter((m) => m !== STRICT_PLACEHOLDER) : listed.members;
  const problem =
    listed.count < 1 || standbys.length === 0
      ? 'waits for no standby'
      : holdForSite && (!listed.members.includes(STRICT_PLACEHOLDER) || listed.count !== listed.members.length)
        ? `lets commits through without a standby in each of the ${c.siteRule} other site(s) synchronous_site_count requires (strict mode)`
        : // Quorum mode's hold keeps the standbys listed before (no weaker quorum; planQuorum): behind the placeholder,
          // which every commit waits for, a listed standby that does not stream holds nothing back that is not held.
          !(holdForSite && c.mode === 'quorum') && standbys.some((m) => !names.has(m))
          ? 'lists a standby that does not stream from the leader'
          : syncNamed.length === 0
            ? '/sync names no synchronous standby'
            : syncNamed.some((j) => !listed.members.includes(NODE_NAMES[j]))
              ? '/sync names a standby synchronous_standby_names does not list'
              : c.mode !== 'quorum' && !holdForSite && listed.count !== 1
                ? 'waits for a number of standbys other than synchronous_node_count (1)'
                : c.mode === 'quorum' &&
                    (candidates.some(
                      (j) =>
                        !c.nodes[j].noFailover && (!listed.members.includes(NODE_NAMES[j]) || !syncNamed.includes(j)),
                    ) ||
                      (listed.count !== 1 && !c.siteRule))
                  ? 'quorum mode does not list and name every streaming standby that may fail over, with ANY 1'
                  : null;
  return problem
    ? fail(`settled with ${[...names].join(', ')} streaming from ${NODE_NAMES[leader]}, but ${shown} ${problem}`)
    : null;
}

/** Sites other than the leader's that `synchronous_site_count` requires and no streaming candidate stands in. */
function sitesMissing(c: ClusterModel, leader: number, candidates: number[]): number {
  if (!c.siteRule) return 0;
  const others = new Set(candidates.map((j) => MODEL_SITES[j]).filter((site) => site !== MODEL_SITES[leader]));
  return Math.max(0, c.siteRule - others.size);
}

const fail = (message: string) => ({ invariant: 'sync-settled' as const, message });
