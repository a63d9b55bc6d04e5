/**
 * Quorum commit: the ordered changes of synchronous_standby_names and `/sync` from any state to the optimal one,
 * never through a state that could lose an acknowledged commit (reference: Patroni 4.1.4 `patroni/quorum.py`;
 * the same steps wherever it has an answer). A commit needs the primary and any `numsync` of `sync`; a standby
 * promotes on seeing `quorum` of the other `voters`, the `/sync` leader among them. No loss needs any two such
 * sets to meet: `|voters ∪ sync| <= quorum + numsync` (standbys only), and one set within the other while a
 * change is half done. So whichever of numsync and quorum rises is written before the other comes down.
 * Optimal: sync = voters = active, numsync = min(syncWanted, |active|), quorum = |active| - numsync.
 */

export interface QuorumState {
  /** `/sync` leader, quorum and standbys (the reference's `voters`). */
  leader: string;
  quorum: number;
  voters: string[];
  /** synchronous_standby_names: ANY numsync (sync...). */
  numsync: number;
  sync: string[];
  /** How many of `sync` are confirmed to have reached the primary's flush LSN since they were added. */
  numsyncConfirmed: number;
  /**
   * numsyncConfirmed was measured (each listed standby's position against what was acknowledged), so 0 means
   * none caught up rather than "not known yet": the reference's guess from the quorum is then not taken.
   */
  confirmedMeasured?: boolean;
  /** Members streaming from the primary and eligible to be synchronous. */
  active: string[];
  /** synchronous_node_count. */
  syncWanted: number;
  /** This node (the lock holder); may differ from `leader` right after a failover. */
  leaderWanted: string;
}

export type QuorumTransition =
  | { kind: 'dcs'; leader: string; quorum: number; voters: string[] } // write /sync
  | { kind: 'ssn'; numsync: number; sync: string[] } // set synchronous_standby_names
  | { kind: 'restart' }; // stop, re-read state, run again

export class QuorumError extends Error {}

/**
 * The ordered steps from `state` to the optimal state; each step keeps the invariant. Throws QuorumError
 * when the input state itself breaks it in a way the reference refuses.
 */
export function quorumTransitions(state: QuorumState): QuorumTransition[] {
  const plan = new QuorumPlan(state);
  const steps: QuorumTransition[] = [];
  try {
    for (const step of plan.steps()) {
      steps.push(step);
      if (step.kind === 'restart') break;
    }
  } catch (error) {
    if (!(error instanceof QuorumError) || !plan.startedSafe) throw error;
    // The reference gives up here (an exception every loop) although nothing was unsafe: take the safe way round.
    return stopPromotionsThenResync(state);
  }
  // Of two writes of the same thing in a row only the second matters: nobody acts on the first.
  return steps.filter((step, i) => steps[i + 1]?.kind !== step.kind);
}

/** Safe from any safe state: with no voters nobody can promote, and synchronous_standby_names may change at will. */
function stopPromotionsThenResync(state: QuorumState): QuorumTransition[] {
  const [active, sync] = [new Names(state.active), new Names(state.sync)];
  const numsync = Math.min(state.syncWanted, active.size);
  const steps: QuorumTransition[] = [];
  if (state.voters.length > 0 || !sameName(state.leader, state.leaderWanted)) {
    steps.push({ kind: 'dcs', leader: state.leaderWanted, quorum: 0, voters: [] });
  }
  if (Math.min(state.numsync, sync.size) !== numsync || !sync.equals(active))
    steps.push({ kind: 'ssn', numsync, sync: active.sorted() });
  // The voters come back on a later run, once the standbys are confirmed.
  return active.size > 0 ? [...steps, { kind: 'restart' }] : steps;
}

/** Member names as PostgreSQL compares `application_name`: case-insensitively; a later spelling replaces an earlier. */
class Names implements Iterable<string> {
  private readonly bySpelling = new Map<string, string>();
  constructor(names: Iterable<string> = []) {
    for (const name of names) this.bySpelling.set(name.toLowerCase(), name);
  }
  get size(): number {
    return this.bySpelling.size;
  }
  [Symbol.iterator](): Iterator<string> {
    return this.bySpelling.values();
  }
  has(name: string): boolean {
    return this.bySpelling.has(name.toLowerCase());
  }
  union(other: Iterable<string>): Names {
    return new Names([...this, ...other]);
  }
  minus(other: Iterable<string>): Names {
    const removed = new Names(other);
    return new Names([...this].filter((name) => !removed.has(name)));
  }
  /** Spelled as in `other`, as the reference's intersection is. */
  intersect(other: Names): Names {
    return new Names([...other].filter((name) => this.has(name)));
  }
  within(other: Names): boolean {
    return [...this].every((name) => other.has(name));
  }
  equals(other: Names): boolean {
    return this.size === other.size && this.within(other);
  }
  sorted(): string[] {
    return [...this].sort();
  }
}

const NOBODY = new Names();
const sameName = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase();
const fail = (message: string): never => {
  throw new QuorumError(message);
};

/** The reference's state machine on a working copy of the state: each phase yields its steps as it takes them. */
class QuorumPlan {
  private leader: string;
  private quorum: number;
  private voters: Names;
  private sync: Names;
  private numsync: number;
  private confirmed: number;
  private readonly active: Names;
  /** A takeover, or a state that kept the invariant: safe to fall back from should the plan fail. */
  readonly startedSafe: boolean;

  constructor(private readonly state: QuorumState) {
    this.leader = state.leader;
    this.quorum = state.quorum;
    this.voters = new Names(state.voters);
    this.sync = new Names(state.sync);
    this.numsync = Math.min(state.numsync, this.sync.size); // ANY n of fewer than n names waits for all of them
    this.confirmed = state.numsyncConfirmed;
    this.active = new Names(state.active);
    this.startedSafe = this.takingOver() || this.violation() === null;
  }

  *steps(): Generator<QuorumTransition> {
    if (this.takingOver()) {
      try {
        const noStandbyYet = yield* this.takeOver();
        if (noStandbyYet) return; // give the standbys a loop to reconnect before they count as gone
      } catch (error) {
        if (!(error instanceof QuorumError)) throw error;
        yield* this.writeDcs(this.sync.size - this.numsync, this.sync);
      }
    } else if (this.violation() !== null) {
      yield* this.writeDcs(this.sync.size - this.numsync, this.sync); // someone else changed one side: voters follow
    }
    if (this.takingOver()) fail('the /sync key still names the former leader');
    // Not measured yet after a restart or a failover: the quorum says how many were caught up.
    const streaming = this.sync.intersect(this.active).size;
    // That guess counts standbys that hold every commit, not which: once one of them leaves, the one left may lack
    // them (the model checker's quorum-gap invariant). A measured 0 stands.
    if (this.confirmed === 0 && streaming > 0 && !this.state.confirmedMeasured)
      this.confirmed = Math.min(streaming, this.voters.size - this.quorum);
    yield* this.finishInterruptedChange();
    yield* this.dropGoneStandbys();
    yield* this.addNewStandbys();
    yield* this.applyReplicationFactor();
  }

  private takingOver(): boolean {
    return !sameName(this.leader, this.state.leaderWanted);
  }
  /** Why the current state could lose a commit, or null. */
  private violation(): string | null {
    const voters = this.voters.union([this.leader]);
    const sync = this.sync.union([this.state.leaderWanted]);
    const nodes = voters.union(sync).size;
    if (this.voters.size > 0 && nodes > this.quorum + this.numsync + 1) {
      return `quorum ${this.quorum} and ANY ${this.numsync} need not overlap among ${nodes} nodes`;
    }
    if (voters.within(sync) || sync.within(voters)) return null;
    return `voters only: ${voters.minus(sync).sorted()}, sync only: ${sync.minus(voters).sorted()}`;
  }

  /** The new leader counts its predecessor among the voters; returns whether no listed standby streams yet. */
  private *takeOver(): Generator<QuorumTransition, boolean> {
    const voters = this.voters.minus([this.state.leaderWanted]).union([this.leader]);
    if (this.sync.size === 0) yield* this.setSsn(voters.size - this.quorum, voters);
    yield* this.writeDcs(this.quorum, voters, { leader: this.state.leaderWanted });
    return this.sync.intersect(this.active).size === 0;
  }

  /** An earlier run stopped halfway: make voters and sync the same set again, then settle the two counts. */
  private *finishInterruptedChange(): Generator<QuorumTransition> {
    if (this.sync.within(this.voters) && this.sync.size < this.voters.size) {
      // Voters went first: forget the gone ones not synced to, sync to the live ones.
      const gone = this.voters.minus(this.sync.union(this.active));
      if (gone.size > 0) {
        const voters = this.voters.minus(gone);
        const syncAllLive = this.sync.minus(this.active).size === 0;
        yield* this.writeDcs(voters.size - this.numsync, voters, { raiseForUnconfirmed: syncAllLive });
      }
      const live = this.voters.intersect(this.active).minus(this.sync);
      if (live.size > 0) yield* this.setSsn(this.numsync, this.sync.union(live));
    } else if (this.voters.within(this.sync) && this.voters.size < this.sync.size) {
      // Sync went first: drop gone standbys while a voter stays synced, let the live ones vote, drop the rest.
      const gone = this.sync.minus(this.active);
      const kept = this.sync.minus(gone);
      if (gone.size > 0 && kept.size > 0 && (this.voters.size === 0 || kept.intersect(this.voters).size > 0)) {
        yield* this.setSsn(Math.min(this.numsync, kept.size), kept);
      }
      const live = this.sync.minus(this.voters).intersect(this.active);
      if (live.size > 0) {
        const voters = this.voters.union(live);
        yield* this.writeDcs(voters.size - this.numsync, voters);
      }
      const syncOnly = this.sync.minus(this.voters);
      if (syncOnly.size > 0)
        yield* this.setSsn(Math.min(this.numsync, this.sync.size - syncOnly.size), this.sync.minus(syncOnly));
    }
    if (!this.voters.equals(this.sync))
      fail(`voters ${this.voters.sorted()} still differ from sync ${this.sync.sorted()}`);

    const nodes = this.voters.size;
    if (this.quorum + Math.min(this.numsync, this.confirmed) > nodes) {
      // The replication factor was changing: bring down whichever side still stands too high.
      if (this.numsync > this.state.syncWanted) {
        yield* this.setSsn(Math.max(this.state.syncWanted, nodes - this.quorum), this.sync);
      } else {
        yield* this.writeDcs(nodes - this.numsync, this.voters);
      }
    } else if (
      this.numsync === this.state.syncWanted &&
      this.quorum + this.numsync > nodes &&
      this.numsync > this.confirmed
    ) {
      yield* this.writeDcs(nodes - this.numsync, this.voters);
    }
  }

  private *dropGoneStandbys(): Generator<QuorumTransition> {
    let gone = this.sync.minus(this.active);
    if (gone.size === 0) return;
    if (gone.size === this.sync.size) {
      // Nobody left to sync to: stop promotions, then stop waiting.
      yield* this.writeDcs(0, NOBODY, { raiseForUnconfirmed: false });
      yield* this.setSsn(0, NOBODY);
      return;
    }
    if (this.quorum > 0) {
      // Up to `quorum` standbys can leave with numsync unchanged (or raised to the wanted factor); highest names first.
      const leaving = [...gone].sort().reverse().slice(0, this.quorum);
      const sync = this.sync.minus(leaving);
      yield* this.setSsn(Math.min(Math.max(this.state.syncWanted, this.numsync), sync.size), sync);
      const voters = this.voters.minus(leaving);
      gone = this.sync.intersect(gone);
      yield* this.writeDcs(voters.size - this.numsync, voters, { raiseForUnconfirmed: gone.size === 0 });
    }
    if (gone.size === 0) return;
    if (this.quorum !== 0) fail(`quorum ${this.quorum} left while removing ${gone.sorted()}`);
    // The rest leave with numsync; the quorum takes over what numsync keeps above the wanted factor.
    const numsync = this.numsync - gone.size;
    const sync = this.sync.minus(gone);
    const voters = this.voters.minus(gone);
    const excess = numsync - Math.min(this.state.syncWanted, sync.size);
    yield* this.writeDcs(excess ? Math.min(excess, voters.size - 1) : 0, voters, { raiseForUnconfirmed: false });
    yield* this.setSsn(numsync, sync);
  }

  private *addNewStandbys(): Generator<QuorumTransition> {
    let joining = this.active.minus(this.sync);
    if (joining.size === 0) return;
    const wanted = Math.min(this.state.syncWanted, this.sync.union(joining).size);
    const missing = wanted - this.numsync;
    if (missing > 0) {
      // Reach the wanted factor first with the first names, or with everyone while nobody is synced yet.
      const first = this.sync.size > 0 ? new Names(joining.sorted().slice(0, missing)) : joining;
      yield* this.setSsn(this.numsync + Math.min(missing, first.size), this.sync.union(first));
      const voters = this.voters.union(first);
      yield* this.writeDcs(voters.size - wanted, voters);
      joining = joining.minus(this.sync);
    }
    if (joining.size === 0) return;
    // The others vote before they are synced to.
    const voters = this.voters.union(joining);
    yield* this.writeDcs(voters.size - wanted, voters, { raiseForUnconfirmed: wanted > this.confirmed });
    yield* this.setSsn(wanted, this.sync.union(joining));
  }

  private *applyReplicationFactor(): Generator<QuorumTransition> {
    const change = Math.min(this.state.syncWanted, this.sync.size) - this.numsync;
    if (change > 0) {
      yield* this.setSsn(this.numsync + change, this.sync);
      yield* this.writeDcs(this.voters.size - this.numsync, this.voters);
    } else if (change < 0) {
      if (this.quorum - change < this.voters.size) {
        const raise = this.state.syncWanted > this.confirmed;
        yield* this.writeDcs(this.voters.size - this.numsync - change, this.voters, { raiseForUnconfirmed: raise });
      }
      yield* this.setSsn(this.numsync + change, this.sync);
    }
  }

  /**
   * Writes `/sync`; the quorum rises by the synced standbys not confirmed yet, so that a leader race meets one with
   * every commit. With none confirmed the voters stay empty: nothing to write, re-read once standbys caught up.
   */
  private *writeDcs(
    quorum: number,
    voters: Names,
    options: { leader?: string; raiseForUnconfirmed?: boolean } = {},
  ): Generator<QuorumTransition> {
    if (quorum < 0 || (quorum > 0 && quorum >= voters.size)) fail(`quorum ${quorum} of ${voters.sorted()}`);
    const formerLeader = this.leader;
    if (options.leader !== undefined) {
      this.leader = options.leader;
    } else if (this.confirmed === 0 && this.voters.size === 0) {
      [quorum, voters] = [0, NOBODY];
    } else if (options.raiseForUnconfirmed ?? true) {
      quorum += Math.max(this.numsync - this.confirmed, 0);
    }
    if (this.leader === formerLeader && quorum === this.quorum && voters.equals(this.voters)) {
      if (this.voters.size === 0) yield { kind: 'restart' };
      return;
    }
    [this.quorum, this.voters] = [quorum, voters];
    this.mustStaySafe();
    yield { kind: 'dcs', leader: this.leader, quorum, voters: voters.sorted() };
  }

  private *setSsn(numsync: number, sync: Names): Generator<QuorumTransition> {
    if (numsync < 0 || numsync > sync.size) fail(`ANY ${numsync} of ${sync.sorted()}`);
    [this.numsync, this.sync] = [numsync, sync];
    this.mustStaySafe();
    yield { kind: 'ssn', numsync, sync: sync.sorted() };
  }
  private mustStaySafe(): void {
    const violation = this.violation();
    if (violation !== null) fail(violation);
  }
}
