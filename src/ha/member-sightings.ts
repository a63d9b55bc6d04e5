import { ClusterView } from '../dcs/dcs.port';

/** More names than any cluster has: a flood of short-lived member keys cannot grow the map without bound. */
const MAX_REMEMBERED = 1000;

/**
 * When this node last saw each member in the DCS, so that a leader keeps a departed member's slot for
 * `member_slots_ttl` (the reference's key, 30 min by default) and creates it at promotion. A leader's
 * member key lives on the same lease as the leader key: when that lease ends, the new leader's view
 * lacks the old leader, and without its slot the old leader's first connection after its rejoin fails
 * ("replication slot does not exist"), and PostgreSQL retries only after wal_retrieve_retry_interval (5 s).
 */
export class MemberSightings {
  private readonly lastSeen = new Map<string, number>();

  /** Every member and the leader key's holder in a fresh view; with `history`, also the leader of the current timeline. */
  see(cluster: ClusterView, now: number, { history = false } = {}): void {
    const names = cluster.members.map((member) => member.name);
    if (cluster.leader) names.push(cluster.leader.value);
    const lastEntry = history ? cluster.history?.value.at(-1) : undefined;
    if (lastEntry && typeof lastEntry[4] === 'string') names.push(lastEntry[4]);
    for (const name of names) {
      this.lastSeen.delete(name); // re-inserted last: the map stays in order of last sighting
      this.lastSeen.set(name, now);
    }
    for (const name of this.lastSeen.keys()) {
      if (this.lastSeen.size <= MAX_REMEMBERED) break;
      this.lastSeen.delete(name);
    }
  }

  /** Members seen within the last `ttlSeconds` that the view no longer lists. */
  departedWithin(cluster: ClusterView, ttlSeconds: number, now: number): string[] {
    const present = new Set(cluster.members.map((member) => member.name));
    const departed: string[] = [];
    for (const [name, seenAt] of this.lastSeen) {
      if (now - seenAt > ttlSeconds * 1000) this.lastSeen.delete(name);
      else if (!present.has(name)) departed.push(name);
    }
    return departed;
  }
}
