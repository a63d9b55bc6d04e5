/**
 * Mutants the mutation run cannot catch, each with its reason (by mutant id, see mutants.ts):
 * - `equivalent`: the edit changes no decision at all (the mutated condition is always false in
 *   every configuration the code can run with, or an earlier check already decided), or every
 *   decision it changes is shown safe by an exhaustive test the reason names;
 * - `outside the model`: the edit changes a decision the model never asks for (a feature or a
 *   configuration it does not model). These are not caught; they count against the score.
 */
export interface SurvivorReason {
  kind: 'equivalent' | 'outside the model';
  reason: string;
}

const outside = (reason: string): SurvivorReason => ({ kind: 'outside the model', reason });
const equivalent = (reason: string): SurvivorReason => ({ kind: 'equivalent', reason });

export const EXPLAINED_SURVIVORS: Readonly<Record<string, SurvivorReason>> = {
  "ha/decide.ts decide: remove { type: 'releaseLock' }": outside(
    'a lock holder with an empty data directory: bootstrap and cloning are not modelled',
  ),
  "ha/decide.ts release: remove { type: 'releaseLock' }": outside(
    'only failover time: the lock holder kills its hung server (fault `pgHang`, hung-rule.ts) and, keeping the key, starts it again as the primary at its next cycle; a server that hangs again when started (stuck storage) fails its start, which the model does not have, and releasing at once hands over a ttl sooner, which the model has no bound on',
  ),
  "ha/recover.ts recover: remove { type: 'releaseLock', demote: 'failed_start' }": outside(
    'start failures are not modelled',
  ),
  "ha/recover.ts lockHolderStillStarting: remove { type: 'demote', mode: 'immediate', restart: false, upstream: null }":
    outside('a start that outlives its deadline is not modelled (its servers start at once)'),
  "ha/recover.ts stillStartingWithoutLock: remove { type: 'demote', mode: 'immediate', restart: false, upstream: null }":
    outside('a start that outlives its deadline is not modelled (its servers start at once)'),
  // The race (issue 34, part 3): survivors no scenario can catch, each with the reason.
  'ha/leader-race.ts goodCandidates: drop peer.name !== local.name': equivalent(
    "s.peers never holds this node: the agent's probe asks the other members only (fulfil-need.ts: `m.name !== node.name`), as the model's does (snapshot.ts peerReadings: `j !== i`)",
  ),
  'ha/leader-race.ts healthiest: skip if (peerWal > 0 && peerWal < ownWal)': outside(
    'only failover time: `behind` is read only by siteChoice while the readings may trail (the leader key went away less than loop_wait ago: `readingsMayTrail`, from the race backoff, which the model does not give, its readings being taken at once), and there it only makes a node of another site wait for the next reading, at most loop_wait, before it races across sites; the model has no bound on failover time',
  ),
  'ha/leader-race.ts healthiest: invert if (peerWal > 0 && peerWal < ownWal)': outside(
    'only failover time: `behind` is read only by siteChoice while the readings may trail (the leader key went away less than loop_wait ago: `readingsMayTrail`, from the race backoff, which the model does not give, its readings being taken at once), and there it only makes a node of another site wait for the next reading, at most loop_wait, before it races across sites; the model has no bound on failover time',
  ),
  'ha/leader-race.ts publishedAhead: skip if (!member || isNoFailover(member.data.tags ?? {}))': outside(
    'only failover time: `!member` never holds (peers are probed from the members list), and a nofailover member that does not answer but whose key shows more WAL then bars the race only until its key expires (at most ttl) or it answers again (the loop then passes over a nofailover peer); the outcome afterwards is the same, and the model has no bound on failover time',
  ),
  'ha/sync/sync-eligibility.ts quorumVerdict: skip if (!peer.reachable || peer.isPrimary || peer.name === s.local.name)':
    equivalent(
      "no reading it skips can change the verdict: an unreachable peer has no walPosition (readingFromStatus answers `{ name, reachable: false }`), so it counts neither ahead nor as a vote; s.peers never holds this node (fulfil-need.ts); and a peer that answers as a primary never reaches quorumVerdict, since healthiest returns `Primary (...) is still alive` for it first, whatever its tags (leader-race.ts; before the fix of 29 November a nofailover failsafe leader passed that check, the model checker's finding in docs/chaos-and-safety.md)",
    ),
  // The synchronous planners (issue 34, part 3), one by one.
  "ha/sync/priority-plan.ts planPriority: invert if (standbyNames.kind !== 'priority' && active.length > 0)":
    equivalent(
      'only the spelling of synchronous_standby_names changes: the branch is reached when the listed standbys are the active ones and the count equals their number, and then ANY n and FIRST n over those n names both make a commit wait for every one of them',
    ),
  'ha/sync/priority-plan.ts planPriority: invert if (sameNames(active, voters) && !sameNames(voters, confirmed))':
    equivalent(
      'every /sync it writes or keeps is as safe: where the rewrite fires on the real code the later steps narrow /sync to the confirmed standbys in the same cycle, except when every listed standby is in /sync and the setting waits for all of them, where an unconfirmed one stays in /sync while each commit still waits for it; elsewhere the mutant writes /sync again with the confirmed standbys, which are safe by definition. Checked on every input over two standbys (test/unit/model-check/priority-rewrite.spec.ts)',
    ),
  'ha/sync/priority-plan.ts planPriority: invert if (awaited.length > 0 && !sameNames(confirmed, awaited))': outside(
    'it adds or leaves out a `recheck` step, which only brings the next cycle forward (time within a loop_wait is not modelled); no setting or /sync write changes',
  ),
  'ha/sync/sync-candidates.ts streamingPositions: invert if (lsn !== null)': outside(
    "readiness remembered across cycles: with no standby counted, quorum mode's bound on what was acknowledged is 0, which changes only whether a ready standby behind that bound counts as confirmed (pickSynchronous: `isReady && candidate.lsn >= acknowledgedUpTo`); the model builds SyncReadiness afresh in every cycle (sync-duties.ts observes with the leader's WAL), so a ready standby holds the leader's WAL, which is at or past every standby's, and the check never fails; in the agent a standby that became ready earlier and fell behind does (test/unit/ha/sync/quorum-acknowledged.spec.ts)",
  ),
  'ha/sync/readiness.ts observe: invert if (!listed.has(name))': outside(
    'the model builds SyncReadiness afresh in every cycle (sync-duties.ts), so the set of ready standbys is empty when observe() prunes it; what the agent remembers across cycles is not modelled',
  ),
};
