/**
 * `synchronous_site_count` (docs/sites.md): every acknowledged commit reaches that many sites other
 * than the leader's. Only named sites count: a standby without a `site` may stand next to the leader,
 * and a leader without one cannot tell which standbys stand elsewhere, so neither helps meet the rule.
 */

/** What the rule needs of a standby: its name and its member key's `site`. */
export interface Sited {
  name: string;
  site?: string;
}

/** Standbys grouped by their site, for the sites other than the leader's; empty when the leader has no site. */
function otherSites<T extends Sited>(standbys: readonly T[], leaderSite: string | undefined): Map<string, T[]> {
  const bySite = new Map<string, T[]>();
  if (!leaderSite) return bySite;
  for (const standby of standbys) {
    if (!standby.site || standby.site === leaderSite) continue;
    bySite.set(standby.site, [...(bySite.get(standby.site) ?? []), standby]);
  }
  return bySite;
}

/** How many sites other than the leader's `standbys` stand in. */
export function otherSiteCount(standbys: readonly Sited[], leaderSite: string | undefined): number {
  return otherSites(standbys, leaderSite).size;
}

/**
 * Priority mode (`FIRST n` over every listed standby): the best standby (first in `ordered`) of each of
 * the first `required` other sites met, and how many required sites have none.
 */
export function siteRepresentatives<T extends Sited>(
  ordered: readonly T[],
  leaderSite: string | undefined,
  required: number,
): { representatives: T[]; missing: number } {
  const representatives = [...otherSites(ordered, leaderSite).values()].slice(0, required).map((group) => group[0]);
  return { representatives, missing: required - representatives.length };
}

/**
 * Quorum mode (`ANY k` of `listed`): the smallest k such that any k of them include standbys of
 * `required` other sites, or null when `listed` has fewer other sites. The worst k standbys take
 * every one outside the other sites first, then the largest other sites: k is one more than
 * those plus the `required - 1` largest other sites.
 */
export function quorumCountForSites(
  listed: readonly Sited[],
  leaderSite: string | undefined,
  required: number,
): number | null {
  const sizes = [...otherSites(listed, leaderSite).values()].map((group) => group.length).sort((a, b) => b - a);
  if (sizes.length < required) return null;
  const elsewhere = sizes.reduce((sum, size) => sum + size, 0);
  const largest = sizes.slice(0, required - 1).reduce((sum, size) => sum + size, 0);
  return listed.length - elsewhere + largest + 1;
}

/**
 * The setting a node about to promote starts with (before its first cycle as leader picks again): raised so that
 * no commit returns without the required sites. Priority (`FIRST len`, every name must confirm): the placeholder
 * joins when the names miss a site. Quorum: `ANY k` raised to what the sites need, or every name and the
 * placeholder (strict) when they cannot meet it. Unchanged without a rule.
 */
export function holdForSites(
  names: string[],
  count: number,
  quorum: boolean,
  strict: boolean,
  siteOf: (name: string) => string | undefined,
  leaderSite: string | undefined,
  required: number,
  placeholder: string,
): { names: string[]; count: number } {
  if (required <= 0) return { names, count };
  const listed = names.map((name) => ({ name, site: siteOf(name) }));
  const k = quorum
    ? quorumCountForSites(listed, leaderSite, required)
    : otherSiteCount(listed, leaderSite) >= required
      ? count
      : null;
  if (k !== null) return { names, count: Math.max(count, k) };
  return strict ? { names: [...names, placeholder], count: names.length + 1 } : { names, count };
}
