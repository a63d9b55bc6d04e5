import { FailoverRequest } from '../dcs/dcs.port';
import { PeerReading } from './cluster-snapshot';

/**
 * Patroni's site awareness in the leader race (its branch 96acbe58..4dbbc26f, `_is_healthiest_node`):
 * among the members as far along as this node (same WAL position), the site a switchover asked for,
 * or else the site of the last leader (`current_site` in `/status`), goes first; `failover_priority`
 * is compared only after that. A node of another site defers while such a member can take over, so a
 * failover crosses sites only when none of the current site is left.
 */
export type SiteChoice =
  /** Another member is preferred for its site: this node does not race. */
  | { defer: string }
  /** The members whose failover_priority still counts against this node's; `note` says the race crosses sites. */
  | { rivals: PeerReading[]; note?: string };

export interface SiteRace {
  /** This node's `site`, absent when it has none. */
  ownSite?: string;
  /** The due `/failover` request, if any. */
  failover: FailoverRequest | null;
  /** `current_site` in `/status`: where the last leader ran. */
  currentSite?: string;
  /**
   * Peers that may promote but whose last reading is behind this node's WAL position, and whether the leader
   * key went away less than loop_wait ago. A peer's status document shows its agent's latest reading (taken at
   * the start of each HA cycle, not at each request as Patroni's does): in that window a member of the preferred
   * site may show a position from before the leader's last WAL although it has it. A node of another site waits
   * for that window to end rather than cross sites on such a reading; after it the reading is taken as it is.
   */
  behind?: PeerReading[];
  readingsMayTrail?: boolean;
}

/** `equals`: reachable peers that may promote, in recovery, at this node's WAL position (above 0). */
export function siteChoice(race: SiteRace, equals: PeerReading[]): SiteChoice {
  const { ownSite, failover, currentSite } = race;
  const action = failoverActionName(failover);
  const preferred = failover?.site ?? currentSite;
  const trailing = race.readingsMayTrail ? (race.behind ?? []).find((peer) => peer.site === preferred) : undefined;
  if (preferred && trailing && ownSite !== preferred && !equals.some((peer) => peer.site === preferred)) {
    return {
      defer: `${trailing.name} of the ${failover?.site ? 'requested' : 'current'} site ${preferred} shows a wal position behind mine: waiting for its next reading before a cross-site ${action}`,
    };
  }
  if (failover?.site) {
    const inSite = equals.filter((peer) => peer.site === failover.site);
    if (inSite.length > 0 && ownSite !== failover.site) {
      return {
        defer: `${capitalize(action)} to the requested site ${failover.site} is possible, while my site is ${ownSite ?? 'not set'}`,
      };
    }
    if (ownSite === failover.site) return { rivals: inSite };
    // Nobody of the requested site can take over: priorities decide among the rest (Patroni's branch races them unordered).
    return {
      rivals: equals,
      note: `No members in the requested site ${failover.site}. Performing cross-site ${action}`,
    };
  }
  if (!currentSite) return { rivals: equals };
  const inCurrentSite = equals.filter((peer) => peer.site === currentSite);
  if (inCurrentSite.length > 0 && ownSite !== currentSite) {
    return {
      defer: `Local ${action} in the current site ${currentSite} is possible, while my site is ${ownSite ?? 'not set'}`,
    };
  }
  if (ownSite === currentSite) return { rivals: inCurrentSite };
  return { rivals: equals, note: `No members in the current site ${currentSite}. Performing cross-site ${action}` };
}

/** Patroni's `_get_failover_action_name`: what the log lines call the race. */
export function failoverActionName(failover: FailoverRequest | null): 'failover' | 'switchover' | 'manual failover' {
  if (!failover) return 'failover';
  return failover.leader ? 'switchover' : 'manual failover';
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
