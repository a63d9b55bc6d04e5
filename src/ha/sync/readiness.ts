import { SyncState } from '../../dcs/dcs.port';
import { parseStandbyNames, StandbyNames } from '../../postgresql/standby-names';
import { SyncCandidate } from './sync-candidates';
import { syncNames } from './sync-key';

/**
 * Which listed standbys have caught up (reference `_process_replica_readiness`). A standby just added
 * to synchronous_standby_names may still miss commits acknowledged before: it counts as synchronous
 * only once it has reached the leader's flush position of the moment the setting changed, or when
 * `/sync` already names it (it was synchronous under an earlier setting, e.g. before an agent restart).
 */
export class SyncReadiness {
  private observedNames: string | null = null;
  private listed: StandbyNames = { kind: 'off', count: 0, members: [], hasStar: false };
  private flushAtChange = 0;
  private readonly ready = new Set<string>();

  /**
   * Takes this cycle's reading. Returns true when synchronous_standby_names changed since the last
   * one: the caller then makes a little WAL so the standbys report their positions at once.
   */
  observe(standbyNames: string, leaderFlushLsn: number): boolean {
    if (standbyNames === this.observedNames) return false;
    this.observedNames = standbyNames;
    try {
      this.listed = parseStandbyNames(standbyNames);
    } catch {
      this.listed = { kind: 'off', count: 0, members: [], hasStar: false };
    }
    const listed = new Set(this.listed.members.map((name) => name.toLowerCase()));
    for (const name of [...this.ready]) if (!listed.has(name)) this.ready.delete(name);
    this.flushAtChange = leaderFlushLsn;
    return true;
  }

  /** Marks the listed candidates that qualify now, and returns the names (lower case) ready so far. */
  update(candidates: SyncCandidate[], sync: SyncState | null, quorum: boolean): ReadonlySet<string> {
    const listed = new Set(this.listed.members.map((name) => name.toLowerCase()));
    for (const candidate of candidates) {
      const key = candidate.name.toLowerCase();
      if (this.ready.has(key) || !listed.has(key)) continue;
      const caughtUp = candidate.lsn >= this.flushAtChange;
      const qualifies = quorum
        ? caughtUp && candidate.syncState === 'quorum'
        : syncNames(sync, candidate.name) || (candidate.syncState === 'sync' && caughtUp);
      if (qualifies) this.ready.add(key);
    }
    return this.ready;
  }

  /** A new term starts from what PostgreSQL and `/sync` say, nothing remembered. */
  reset(): void {
    this.observedNames = null;
    this.ready.clear();
  }
}
