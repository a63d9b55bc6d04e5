import { ClusterModel, MAXIMUM_LAG_ON_FAILOVER, NODE_NAMES, NodeModel, reaches } from './model';
import { barredByTimeline } from './settings-rules';

/**
 * 6. Availability (issue 34): a settled cluster (the fault-free schedule leaves it unchanged: every
 * lease and deadline that time ends has ended) that has a member the leader race must let win has a
 * leader (a running primary holding the key). Invariant 4 alone accepts a cluster that settles
 * without one, so a race check inverted to bar everybody would pass.
 *
 * The rules below restate, independently of the code under test, when the reference's race lets a
 * member win; every case they do not cover is a state where no member need be eligible, so they
 * are deliberately conservative (a member counts only when every rule plainly lets it through):
 * - nobody leads while the DCS has no quorum, while the cluster is paused (no automatic failover),
 *   or while a `/failover` request is pending (its candidate rules are invariant 2's);
 * - a member may win only if its agent runs, its member key lives (so it reaches the DCS),
 *   PostgreSQL runs as a replica with no action in flight, and it is not tagged `nofailover`;
 * - within `maximum_lag_on_failover` of the cluster's last known position (`/status` optime), and with
 *   `check_timeline` on, not behind the cluster's timeline;
 * - no member whose agent answers holds more WAL or runs as a primary (the race's WAL comparison;
 *   the former `/sync` leader's lead is not waived here, which is only more conservative);
 * - `on` and `strict` with `/sync` written: only the members `/sync` names (its leader included);
 *   strict mode with no synchronous standby thus leaves nobody but the former leader;
 * - quorum mode with `/sync` written: it hears from `quorum` members `/sync` names that hold some WAL
 *   and are not ahead of it (itself counted when named), or it is `/sync`'s leader and nobody is ahead.
 */
export function mustHaveLeader(c: ClusterModel): number | null {
  if (!c.quorum || c.pause || c.failover) return null;
  const eligible = c.nodes.findIndex((_, i) => mayWin(c, i));
  return eligible >= 0 ? eligible : null;
}

const runsPrimary = (n: NodeModel) => n.pg === 'running' && n.primary && n.op === 'none';

/** A running primary holds the leader key (in a standby cluster, a running replica: the standby leader). */
export function hasLeader(c: ClusterModel): boolean {
  const i = c.leaderKey;
  return i >= 0 && (runsPrimary(c.nodes[i]) || (c.settings?.standbyCluster === true && runsReplica(c.nodes[i])));
}

/** A running primary leads by failsafe mode: the DCS does not answer it, and every member accepted it. */
export const leadsByFailsafe = (c: ClusterModel) =>
  c.failsafe && c.nodes.some((n) => n.leader && n.lease > 0 && runsPrimary(n));

/** Judged on a settled state only (see checkProgress): a member must have won, and none did. */
export function checkAvailability(settled: ClusterModel): { invariant: 'availability'; message: string } | null {
  if (hasLeader(settled) || leadsByFailsafe(settled)) return null;
  const eligible = mustHaveLeader(settled);
  if (eligible === null) return null;
  const n = settled.nodes[eligible];
  return {
    invariant: 'availability',
    message: `the cluster settled without a leader although ${NODE_NAMES[eligible]} (WAL ${n.timeline}/${n.wal}, optime ${settled.optime}) may win the leader race`,
  };
}

/** Answers the race's probe and reports its WAL: its agent runs and its member key lives. */
const answers = (n: NodeModel) => n.agent === 'up' && n.member !== null;
const runsReplica = (n: NodeModel) => n.pg === 'running' && !n.primary && n.op === 'none';

/**
 * Watchdog mode `required` without a usable one; cut off from its peers; failsafe mode: `/failsafe` does not name
 * it, or it accepted a failsafe leader less than a ttl ago (Patroni's rules).
 */
export function barredFromRace(c: ClusterModel, i: number): boolean {
  const n = c.nodes[i];
  if (n.watchdogFailed || n.peerCut || n.acceptedLeft > 0) return true;
  return c.failsafe && c.failsafeKey !== 0 && !(c.failsafeKey & (1 << i));
}

function mayWin(c: ClusterModel, i: number): boolean {
  const n = c.nodes[i];
  if (!answers(n) || n.waking || n.dcsCut || !runsReplica(n) || n.noFailover) return false;
  if (barredFromRace(c, i)) return false;
  if (c.optime - n.wal > MAXIMUM_LAG_ON_FAILOVER) return false;
  // check_timeline on (a search's setting): a member behind the cluster's timeline.
  if (barredByTimeline(c, i)) return false;
  for (let j = 0; j < c.nodes.length; j++) {
    const peer = c.nodes[j];
    if (j === i || !answers(peer) || peer.pg !== 'running') continue;
    if (peer.primary) return false;
    if (!peer.noFailover && peer.wal > n.wal) return false;
  }
  const sync = c.mode !== 'off' ? c.sync : null;
  if (!sync) return true;
  const named = (j: number) => sync.leader === j || sync.standbys.includes(j);
  if (c.mode !== 'quorum') return named(i);
  let votes = named(i) ? 0 : -1;
  let ahead = false;
  c.nodes.forEach((peer, j) => {
    if (j === i || !answers(peer) || !reaches(c, i, j) || peer.pg !== 'running' || peer.op !== 'none' || peer.primary)
      return;
    if (peer.wal > n.wal) ahead = true;
    else if (peer.wal > 0 && named(j)) votes++;
  });
  return votes >= sync.quorum || (!ahead && sync.leader === i);
}
