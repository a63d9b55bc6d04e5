import { Member } from '../dcs/dcs.port';
import { isTruthyTag } from './cluster-snapshot';

/**
 * The member a new or reinitialized replica copies its data from (Patroni's `get_clone_member`, with
 * the site rules of its site-aware branch): a running replica tagged `clonefrom`, one of this node's
 * site first; with none in the site, the leader if it is in the site, else a replica of another
 * site; the leader when no replica qualifies. `site` undefined: every replica counts as local.
 * The first by name is taken where Patroni picks at random, so that a retry goes to the same source.
 */
export function cloneMember(
  members: Member[],
  self: string,
  leader: string | null,
  site: string | undefined,
): Member | undefined {
  const leaderMember = members.find((m) => m.name === leader);
  const replicas = members.filter(
    (m) => m.name !== self && m.name !== leader && isTruthyTag(m.data.tags?.clonefrom) && m.data.state === 'running',
  );
  const local = replicas.filter((m) => site === undefined || m.data.site === site);
  if (local.length > 0) return local[0];
  if (site !== undefined && leaderMember?.data.site === site) return leaderMember;
  return replicas[0] ?? leaderMember;
}
