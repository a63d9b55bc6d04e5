import { Violation } from './model-types';
import { ClusterModel, holdsCommit, NODE_NAMES } from './model';

/**
 * 9. The quorum gap (issue 34, quorum mode): no quorum of `/sync` members lacking an acknowledged
 * commit may elect one of them. The race's rule (quorumVerdict) lets a member win with votes from
 * `quorum` `/sync` members that are not ahead of it (one more when it is not named itself); so for
 * every member that lacks the last commit acknowledged under quorum mode, the other named members
 * that lack it too (and hold some WAL, as a vote needs) must stay fewer than that. Judged on the
 * state, not on a promotion: it flags the gap before a failure exploits it. Conservative: members
 * that cannot answer now (crashed, frozen) count, as they may come back before the holders do.
 */
export function checkQuorumGap(c: ClusterModel): Violation | null {
  const acked = c.acked;
  const sync = c.sync;
  if (c.mode !== 'quorum' || !sync || !acked?.sync) return null;
  // A `/sync` leader without the commit took over without it, by a switchover the operator asked for (lag accepted,
  // as the reference does; invariants 2 and 3 judge automatic promotions): that commit is no longer the cluster's.
  if (!holdsCommit(c, c.nodes[sync.leader], acked)) return null;
  const named = (j: number) => sync.leader === j || sync.standbys.includes(j);
  const lacking = c.nodes.map((_, j) => j).filter((j) => !holdsCommit(c, c.nodes[j], acked));
  for (const candidate of lacking) {
    if (c.nodes[candidate].noFailover) continue;
    const voters = lacking.filter((j) => j !== candidate && named(j) && c.nodes[j].wal > 0);
    const needed = sync.quorum + (named(candidate) ? 0 : 1);
    if (voters.length >= needed) {
      const with_ = voters.length ? ` with the votes of ${voters.map((j) => NODE_NAMES[j]).join(', ')}` : '';
      return {
        invariant: 'quorum-gap',
        message: `${NODE_NAMES[candidate]} lacks the acknowledged commit at ${acked.timeline}/${acked.wal} yet could win the race${with_} (/sync ${NODE_NAMES[sync.leader]} + {${sync.standbys.map((j) => NODE_NAMES[j]).join(', ')}}, quorum ${sync.quorum})`,
      };
    }
  }
  return null;
}
