import { REAL_DECISION_CODE } from './decision-code';
import { DecisionMutation } from './cycle';
import { Violation } from './invariants';
import { ClusterModel, holdsCommit, NODE_NAMES } from './model';

/**
 * `synchronous_site_count` in the model (issue 36): n1 and n2 stand in dc1, n3 in dc2, once a search
 * sets the rule (`Bounds.siteRule`); without it the members have no site, as before.
 */
export const MODEL_SITES: readonly string[] = ['dc1', 'dc1', 'dc2'];

/** The `site` of node i's member key, when the search places members in sites. */
export function modelSiteOf(c: ClusterModel, i: number): string | undefined {
  return c.siteRule ? MODEL_SITES[i] : undefined;
}

/**
 * 5. With `synchronous_site_count` and synchronous_mode_strict, every acknowledged commit is on a member
 * of a site other than the leader's that acknowledged it: on members of 1 + synchronous_site_count sites
 * (the leader holds it in its own). Without strict the rule may be weakened, said in the log, by design.
 */
export function checkSiteRule(c: ClusterModel): Violation | null {
  const acked = c.acked;
  if (!c.siteRule || c.mode !== 'strict' || !acked?.sync) return null;
  const holders = c.nodes.map((_, i) => i).filter((i) => holdsCommit(c, c.nodes[i], acked));
  const sites = new Set(holders.map((i) => MODEL_SITES[i]));
  if (sites.size > c.siteRule) return null;
  const on = holders.map((i) => `${NODE_NAMES[i]} (${MODEL_SITES[i]})`).join(', ') || 'no member';
  return { invariant: 'site', message: `the acknowledged commit at ${acked.timeline}/${acked.wal} is on ${on} only: synchronous_site_count ${c.siteRule} wants ${c.siteRule + 1} sites` };
}

/** The broken variant: the synchronous standbys picked as if synchronous_site_count were 0. */
export const IGNORING_SITES: DecisionMutation = {
  name: 'picking synchronous standbys without the site rule',
  code: {
    ...REAL_DECISION_CODE,
    pickSynchronous: (candidates, ready, leaderFlushLsn, config, acknowledgedUpTo, leaderSite) =>
      REAL_DECISION_CODE.pickSynchronous(candidates, ready, leaderFlushLsn, { ...config, synchronous_site_count: 0 }, acknowledgedUpTo, leaderSite),
  },
};
