import { HaSnapshot, RaceBackoffState } from './cluster-snapshot';
import { Decision } from './decision';

/**
 * Patroni 4.1's `primary_race_backoff` (ha.py, process_unhealthy_cluster): with no leader key, a
 * replica that still receives WAL from the primary (its agent frozen or cut off from the DCS, its
 * PostgreSQL alive) holds back from the leader race for up to `primary_race_backoff` seconds after it
 * first saw the key gone, as long as its WAL position moved since the previous cycle. During the first
 * loop_wait of that window it holds back whatever it sees, as Patroni does: the key may have expired
 * just after the primary's last heartbeat. Not in a paused or standby cluster, nor while a manual
 * failover names a candidate or a site. Returns null when the race goes ahead.
 */
export function primaryRaceBackoff(s: HaSnapshot, race: RaceBackoffState | undefined): Decision | null {
  const { config, local } = s;
  const backoffMs = config.primary_race_backoff * 1000;
  if (backoffMs <= 0 || !race || race.noLeaderSince === 0 || race.previousWalPosition === null) return null;
  if (
    config.pause ||
    config.standby_cluster !== null ||
    s.cluster?.failover?.value.member ||
    s.cluster?.failover?.value.site
  )
    return null;
  const timeLeftMs = race.noLeaderSince + backoffMs - s.now;
  const sample = local.sample;
  const walMoved =
    sample !== null &&
    sample.inRecovery &&
    sample.replicationState === 'streaming' &&
    sample.walPosition > race.previousWalPosition;
  const justExpired = timeLeftMs > backoffMs - config.loop_wait * 1000;
  if (!((timeLeftMs > 0 && walMoved) || justExpired)) return null;
  return {
    verdict: `My (${local.name}) wal position moved since last heart beat loop, ${Math.max(0, Math.round(timeLeftMs / 1000))} seconds until leader race`,
    // The race may not wait a whole loop_wait past the end of the backoff.
    actions: timeLeftMs > 0 ? [{ type: 'wakeAt', at: race.noLeaderSince + backoffMs }] : [],
  };
}
