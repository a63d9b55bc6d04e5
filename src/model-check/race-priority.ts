import { Promotion, Violation } from './model-types';
import { ClusterModel, DcsRead, NODE_NAMES, reaches } from './model';
import { postgresStateName } from './snapshot';
import { modelSiteOf } from './site-rule';

/** `/status` current_site as node i decided on it: its stale read's, if it held one, else the DCS's. */
function currentSiteSeenBy(c: ClusterModel, i: number): string | undefined {
  const view = c.nodes[i].view;
  return view ? (JSON.parse(view) as DcsRead).currentSite : c.currentSite;
}

/**
 * 2c. `failover_priority` among equals (issue 34, part 3): a node that won the leader race automatically had
 * no rival it could reach at the same WAL position (above 0, on its timeline) with a higher `failover_priority`
 * (Patroni 4.1's documented rule: among members as far along, the higher priority takes over). A rival is a
 * member the race compares with: its agent answers, its member key lives, PostgreSQL runs as a replica, not
 * `nofailover`, and in `on` and `strict` mode `/sync` names it. Without it, a race that ignores the tag, or that
 * compares with the wrong members, elects a member the operator ranked lower and breaks no other invariant.
 * 2d. Before the priority, the site (Patroni's site awareness, issue 36; members have sites only in the searches that
 * place them, site-rule.ts): such a rival in `/status` current_site, the site of the last leader, bars a winner of
 * another site.
 */
export function checkRacePriority(before: ClusterModel, p: Promotion): Violation | null {
  if (!p.raced || p.manual || p.paused) return null;
  const winner = before.nodes[p.node];
  if (winner.wal === 0) return null;
  const priorityMode = (before.mode === 'on' || before.mode === 'strict') && before.sync;
  for (const [j, peer] of before.nodes.entries()) {
    if (
      j === p.node ||
      peer.noFailover ||
      peer.watchdogFailed ||
      !reaches(before, p.node, j) ||
      peer.agent !== 'up' ||
      !peer.member ||
      postgresStateName(peer) !== 'running' ||
      peer.primary
    )
      continue;
    if (priorityMode && before.sync!.leader !== j && !before.sync!.standbys.includes(j)) continue;
    if (peer.timeline !== winner.timeline || peer.wal !== winner.wal) continue;
    // 2d. The site first (issue 36): a member of the current site as far along goes before one of another site.
    const preferred = currentSiteSeenBy(before, p.node);
    if (preferred && modelSiteOf(before, p.node) !== preferred && modelSiteOf(before, j) === preferred)
      return {
        invariant: 'priority',
        message: `${NODE_NAMES[p.node]} (site ${modelSiteOf(before, p.node)}) won the leader race at ${winner.timeline}/${winner.wal} although ${NODE_NAMES[j]}, reachable at the same position, is in the current site ${preferred}`,
      };
    if (peer.priority > winner.priority) {
      return {
        invariant: 'priority',
        message: `${NODE_NAMES[p.node]} (failover_priority ${winner.priority}) won the leader race at ${winner.timeline}/${winner.wal} although ${NODE_NAMES[j]}, reachable at the same position, has failover_priority ${peer.priority}`,
      };
    }
  }
  return null;
}
