import { holdForSites } from '../ha/sync/site-placement';
import { STRICT_PLACEHOLDER } from '../postgresql/standby-names';
import { Violation } from './model-types';
import { ClusterModel, holdsCommit, NODE_NAMES, strictMode } from './model';

/**
 * `synchronous_site_count` in the model (issue 36): n1 and n2 stand in dc1, n3 in dc2, once a search
 * sets the rule (`Bounds.siteRule`); without it the members have no site, as before.
 */
export const MODEL_SITES: readonly string[] = ['dc1', 'dc1', 'dc2'];

/** The `site` of node i's member key, when the search places members in sites. */
export function modelSiteOf(c: ClusterModel, i: number): string | undefined {
  return c.siteRule ? MODEL_SITES[i] : undefined;
}

/** SyncReplication.beforePromote's hold: the setting node i starts with as a primary keeps waiting for the required sites. */
export function promotionHoldForSites(
  c: ClusterModel,
  i: number,
  standbys: number[],
  count: number,
  quorum: boolean,
): { names: string[]; count: number } {
  const names = standbys.map((j) => NODE_NAMES[j]);
  const siteOf = (name: string) => modelSiteOf(c, NODE_NAMES.indexOf(name as (typeof NODE_NAMES)[number]));
  return holdForSites(
    names,
    count,
    quorum,
    strictMode(c),
    siteOf,
    modelSiteOf(c, i),
    c.siteRule ?? 0,
    STRICT_PLACEHOLDER,
  );
}

/**
 * 6. With `synchronous_site_count` and synchronous_mode_strict, every acknowledged commit is on a member
 * of a site other than the leader's that acknowledged it: on members of 1 + synchronous_site_count sites
 * (the leader holds it in its own). Without strict the rule may be weakened, said in the log, by design.
 */
export function checkSiteRule(c: ClusterModel): Violation | null {
  const acked = c.acked;
  if (!c.siteRule || !strictMode(c) || !acked?.sync) return null;
  const holders = c.nodes.map((_, i) => i).filter((i) => holdsCommit(c, c.nodes[i], acked));
  const sites = new Set(holders.map((i) => MODEL_SITES[i]));
  if (sites.size > c.siteRule) return null;
  const on = holders.map((i) => `${NODE_NAMES[i]} (${MODEL_SITES[i]})`).join(', ') || 'no member';
  return {
    invariant: 'site',
    message: `the acknowledged commit at ${acked.timeline}/${acked.wal} is on ${on} only: synchronous_site_count ${c.siteRule} wants ${c.siteRule + 1} sites`,
  };
}
