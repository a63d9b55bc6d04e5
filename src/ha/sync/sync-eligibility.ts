import { FailoverRequest } from '../../dcs/dcs.port';
import { HaSnapshot, PeerReading } from '../cluster-snapshot';
import { quorumModeActive, syncNames, syncQuorumOf, synchronousModeActive } from './sync-key';

/**
 * Who may take over in synchronous mode (spec 4.8 rule 6, reference `is_healthiest_node` and
 * `get_failover_candidates`): only members `/sync` names (its leader included), so that a promoted
 * node holds every acknowledged commit. A manual failover (no leader nor site named) may pick anyone. In
 * quorum mode anyone may race, but must hear from enough `/sync` members (see quorumVerdict).
 */
export function barredBySync(s: HaSnapshot, name: string, failover: FailoverRequest | null): boolean {
  if (!synchronousModeActive(s.config, s.cluster) || quorumModeActive(s.config, s.cluster)) return false;
  // A switchover to a site keeps the rule, as Patroni's branch does for a site without a leader named.
  if (failover && !failover.leader && !failover.site) return false;
  return !syncNames(s.cluster!.sync!.value, name, true);
}

/** Peers to compare WAL positions with in the leader race: in priority sync mode only `/sync` members. */
export function racePeers(s: HaSnapshot): PeerReading[] {
  const peers = s.peers ?? [];
  if (!synchronousModeActive(s.config, s.cluster) || quorumModeActive(s.config, s.cluster)) return peers;
  return peers.filter((peer) => syncNames(s.cluster!.sync!.value, peer.name, true));
}

/** In synchronous mode the former leader may be reachable and ahead: it does not bar the race. */
export function isFormerSyncLeader(s: HaSnapshot, name: string): boolean {
  return (
    synchronousModeActive(s.config, s.cluster) && s.cluster!.sync!.value.leader?.toLowerCase() === name.toLowerCase()
  );
}

/**
 * Quorum mode's leader race: votes from `/sync` members that are not ahead of this node must reach
 * `quorum` (this node counts itself when it is a member); the former leader alone with nobody ahead
 * is healthy too. Null outside quorum mode.
 */
export function quorumVerdict(s: HaSnapshot, ownWal: number): { ok: boolean; reason: string } | null {
  if (!quorumModeActive(s.config, s.cluster)) return null;
  const sync = s.cluster!.sync!.value;
  const quorum = syncQuorumOf(sync);
  let votes = syncNames(sync, s.local.name, true) ? 0 : -1;
  let ahead = 0;
  for (const peer of s.peers ?? []) {
    if (!peer.reachable || peer.isPrimary || peer.name === s.local.name) continue;
    const wal = peer.walPosition ?? 0;
    if (wal > ownWal) ahead++;
    else if (wal > 0 && syncNames(sync, peer.name, true)) votes++;
  }
  if (votes >= quorum || (ahead === 0 && sync.leader === s.local.name))
    return { ok: true, reason: `quorum reached: ${votes} vote(s) of ${quorum} needed` };
  return { ok: false, reason: `quorum not reached: ${Math.max(votes, 0)} vote(s) of ${quorum} needed` };
}

/** Quorum mode without a named candidate: the leader may step down only if enough members can take over. */
export function quorumAllowsCandidates(s: HaSnapshot, goodCandidates: number, candidateNamed: boolean): boolean {
  if (!quorumModeActive(s.config, s.cluster) || candidateNamed) return true;
  return goodCandidates - 1 >= syncQuorumOf(s.cluster!.sync!.value);
}
