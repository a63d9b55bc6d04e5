import { formatStandbyNames, STRICT_PLACEHOLDER } from '../../postgresql/standby-names';
import { PriorityPlanInput, SyncStep } from './priority-plan';
import { quorumTransitions } from './quorum-resolver';

export interface QuorumPlanInput extends PriorityPlanInput {
  /** `/sync` leader: the former leader right after a failover, until the key is handed over. */
  leader: string;
  me: string;
  quorum: number;
  syncWanted: number;
}

/**
 * Quorum commit (`ANY n`, reference `_process_quorum_replication`): the resolver orders the changes
 * of synchronous_standby_names and `/sync` so that any set of standbys that can acknowledge a commit
 * overlaps any set that can elect a new leader, at every step.
 */
export function planQuorum(input: QuorumPlanInput): SyncStep[] {
  const { standbyNames, active, voters, quorum, strict, currentValue } = input;
  const listedNow = standbyNames.members;
  const minimum = strict ? 1 : 0;
  if (strict && input.leader === input.me && (input.sitesMissing ?? 0) > 0) {
    // No weaker quorum, and no commit acknowledged until a standby of the missing site is back: every listed
    // standby and the placeholder must answer. `/sync` stays as it is (a larger ANY only narrows who acknowledges).
    const listedStandbys = listedNow.filter((name) => name !== STRICT_PLACEHOLDER);
    const held = formatStandbyNames([...listedStandbys, STRICT_PLACEHOLDER], listedStandbys.length + 1, true);
    const steps: SyncStep[] = [];
    if (held !== currentValue)
      steps.push({ type: 'setStandbyNames', value: held, log: `Assigning synchronous_standby_names to ${held}` });
    steps.push({
      type: 'strictHold',
      log: `synchronous_site_count is not met and synchronous_mode_strict is requested: no commit is acknowledged until a standby of the missing site confirms it. Commits will be delayed.`,
    });
    return steps;
  }
  if (input.leader === input.me && active.length < minimum) {
    const count = Math.max(minimum, voters.length - quorum);
    const value = formatStandbyNames(voters, count, true);
    const steps: SyncStep[] = [];
    if (value !== currentValue)
      steps.push({ type: 'setStandbyNames', value, log: `Assigning synchronous_standby_names to ${value}` });
    const kept =
      value === currentValue && voters.length > 0
        ? `Continue using old value of synchronous_standby_names="${value}". `
        : '';
    steps.push({
      type: 'strictHold',
      log: `No active replication connections from Patroni members and synchronous_mode_strict is requested. ${kept}Commits will be delayed.`,
    });
    return steps;
  }
  if (
    minimum === 0 &&
    active.length === 0 &&
    voters.length === 0 &&
    (listedNow.length > 0 || standbyNames.count > 0) &&
    currentValue !== ''
  ) {
    return [
      {
        type: 'setStandbyNames',
        value: '',
        log: 'Assigning synchronous_standby_names to an empty value: no standby can be synchronous',
      },
    ];
  }
  const transitions = quorumTransitions({
    leader: input.leader,
    quorum,
    voters,
    numsync: standbyNames.kind === 'off' ? 0 : standbyNames.count,
    sync: listedNow,
    numsyncConfirmed: input.confirmed.length,
    confirmedMeasured: true,
    active,
    syncWanted: input.syncWanted,
    leaderWanted: input.me,
  });
  const steps: SyncStep[] = [];
  for (const transition of transitions) {
    if (transition.kind === 'restart') {
      steps.push({ type: 'recheck' });
      break;
    }
    if (transition.kind === 'dcs') {
      const log = `Setting leader to ${transition.leader}, quorum to ${transition.quorum} of (${transition.voters.join(', ')})`;
      steps.push({
        type: 'writeSync',
        leader: transition.leader,
        standbys: transition.voters,
        quorum: transition.quorum,
        log,
      });
    } else {
      const value = formatStandbyNames(transition.sync, transition.numsync, true);
      steps.push({ type: 'setStandbyNames', value, log: `Assigning synchronous_standby_names to ${value}` });
    }
  }
  if (transitions.length === 0 && standbyNames.kind !== 'quorum' && listedNow.length > 0) {
    // From FIRST n to ANY n: the same standbys, counted as a quorum.
    const value = formatStandbyNames(listedNow, standbyNames.count, true);
    steps.push({ type: 'setStandbyNames', value, log: `Assigning synchronous_standby_names to ${value}` });
  }
  return steps;
}
