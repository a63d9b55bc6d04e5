import { parseStandbyNames, StandbyNames } from '../postgresql/standby-names';
import { hasLeader } from './availability';
import { Violation } from './model-types';
import { ClusterModel, NODE_NAMES } from './model';
import { MODEL_SITES } from './site-rule';
import { streamingFrom } from './snapshot';

/**
 * 8, outside strict mode (issue 36 part 2): `synchronous_site_count` N in quorum mode and in `on` mode. There the
 * rule is kept within the sites reachable (a missing site weakens it, said in the log, by design), so it is judged
 * on settled states, as invariant 7: once the cluster settled with a leader, and members of other sites stream
 * from it and may be synchronous, the weakest set of standbys a commit may wait for (any `ANY n` subset of the
 * listed ones that stream; the first `FIRST n` listed that stream) spans min(N, those sites) sites other than the
 * leader's. So every commit acknowledged from then on is on a member of another site whenever one can hold it.
 */
export function checkSiteRuleSettled(c: ClusterModel): Violation | null {
  if (!c.siteRule || (c.mode !== 'quorum' && c.mode !== 'on') || !c.quorum || c.pause || c.failover || !hasLeader(c))
    return null;
  const leader = c.leaderKey;
  let listed: StandbyNames;
  try {
    listed = parseStandbyNames(c.nodes[leader].standbyNames);
  } catch {
    return null; // invariant 7 reports it
  }
  const leaderSite = MODEL_SITES[leader];
  const candidates = streamingFrom(c, leader).filter(
    (j) => c.nodes[j].member?.running && c.nodes[j].agent === 'up' && !c.nodes[j].noSync,
  );
  const reachable = new Set(candidates.map((j) => MODEL_SITES[j]).filter((site) => site !== leaderSite));
  const wanted = Math.min(c.siteRule, reachable.size);
  if (wanted === 0) return null;
  const streaming = listed.members.filter((name) =>
    candidates.includes(NODE_NAMES.indexOf(name as (typeof NODE_NAMES)[number])),
  );
  const sitesOf = (names: string[]) =>
    new Set(
      names
        .map((name) => MODEL_SITES[NODE_NAMES.indexOf(name as (typeof NODE_NAMES)[number])])
        .filter((site) => site !== leaderSite),
    ).size;
  const waitedFor = listed.kind === 'quorum' ? subsets(streaming, listed.count) : [streaming.slice(0, listed.count)];
  const weakest = waitedFor.find((set) => sitesOf(set) < wanted);
  if (!weakest) return null;
  return {
    invariant: 'site',
    message: `settled with ${NODE_NAMES[leader]} (${leaderSite}) leading and ${[...reachable].join(', ')} streaming, but synchronous_standby_names '${c.nodes[leader].standbyNames}' lets a commit through on ${weakest.join(', ') || 'no standby'}: synchronous_site_count ${c.siteRule} wants ${wanted} other site(s)`,
  };
}

/** Every subset of `count` names (a handful of members: enumerated). */
function subsets(names: string[], count: number): string[][] {
  if (count <= 0) return [[]];
  if (names.length < count) return [];
  const [first, ...rest] = names;
  return [...subsets(rest, count - 1).map((set) => [first, ...set]), ...subsets(rest, count)];
}
