import { formatStandbyNames, StandbyNames, STRICT_PLACEHOLDER } from '../../postgresql/standby-names';

/** One step towards the wanted synchronous state, carried out in order; a failed `/sync` write ends the cycle's steps. */
export type SyncStep =
  /** `leader` differs from this node only while quorum mode hands the key over after a failover. */
  | { type: 'writeSync'; standbys: string[]; quorum: number; log: string; leader?: string }
  | { type: 'setStandbyNames'; value: string; log: string }
  /** Strict mode holds commits: said once per episode, as the reference warns. */
  | { type: 'strictHold'; log: string }
  /** Listed standbys are not confirmed yet: look again shortly rather than a whole loop_wait later. */
  | { type: 'recheck' };

export interface PriorityPlanInput {
  /** The standbys `/sync` names (its leader is this node by now). */
  voters: string[];
  /** synchronous_standby_names in force, as written and as parsed. */
  currentValue: string;
  standbyNames: StandbyNames;
  /** Standbys to list, best first, and those of them confirmed synchronous and caught up. */
  active: string[];
  confirmed: string[];
  strict: boolean;
  /** Sites `synchronous_site_count` requires that no eligible standby stands in (pickSynchronous). */
  sitesMissing?: number;
}

const sameNames = (a: readonly string[], b: readonly string[]) => {
  const left = new Set(a.map((n) => n.toLowerCase()));
  return left.size === new Set(b.map((n) => n.toLowerCase())).size && b.every((n) => left.has(n.toLowerCase()));
};
const common = (a: readonly string[], b: readonly string[]) =>
  a.filter((n) => b.some((m) => m.toLowerCase() === n.toLowerCase()));
const listed = (names: string[]) => (names.length > 0 ? names.join(', ') : 'none');

/**
 * Synchronous replication with `FIRST n` (reference `_process_multisync_replication`). The order keeps
 * every acknowledged commit on each standby `/sync` names: a standby leaves `/sync` before it leaves
 * synchronous_standby_names, and joins `/sync` only once PostgreSQL reports it synchronous and it has
 * caught up. Strict mode never lets commits through without a standby.
 */
export function planPriority(input: PriorityPlanInput): SyncStep[] {
  const { active, confirmed, standbyNames, strict, currentValue } = input;
  const steps: SyncStep[] = [];
  let voters = input.voters;
  const listedNow = standbyNames.hasStar ? ['*'] : standbyNames.members;

  if (sameNames(active, voters) && !sameNames(voters, confirmed)) {
    steps.push({
      type: 'writeSync',
      standbys: confirmed,
      quorum: 0,
      log: `Inconsistent state between synchronous_standby_names = ${listed(confirmed)} and /sync = ${listed(voters)} key detected, updating synchronous replication key...`,
    });
    voters = confirmed;
  }

  if (strict && active.length === 0) {
    // The voters may all stand in the leader's site: with a site missing, the placeholder keeps commits waiting.
    const held = (input.sitesMissing ?? 0) > 0 && voters.length > 0 ? [...voters, STRICT_PLACEHOLDER] : voters;
    const count = Math.max(1, held.length);
    const value = formatStandbyNames(held, count, false);
    const unchanged =
      value === currentValue ||
      (sameNames(held, listedNow) && standbyNames.count === count && standbyNames.kind === 'priority');
    if (!unchanged)
      steps.push({ type: 'setStandbyNames', value, log: `Assigning synchronous_standby_names to ${value}` });
    const kept =
      unchanged && voters.length > 0 ? `Continue using old value of synchronous_standby_names="${value}". ` : '';
    steps.push({
      type: 'strictHold',
      log: `No active replication connections from Patroni members and synchronous_mode_strict is requested. ${kept}Commits will be delayed.`,
    });
    return steps;
  }
  if (!strict && active.length === 0 && voters.length === 0 && (listedNow.length > 0 || standbyNames.count > 0)) {
    steps.push({
      type: 'setStandbyNames',
      value: '',
      log: 'Assigning synchronous_standby_names to an empty value: no standby can be synchronous',
    });
    return steps;
  }

  if (sameNames(active, voters) && sameNames(voters, listedNow) && standbyNames.count === active.length) {
    if (standbyNames.kind !== 'priority' && active.length > 0) {
      const value = formatStandbyNames(active, null, false);
      steps.push({ type: 'setStandbyNames', value, log: `Assigning synchronous_standby_names to ${value}` });
    }
    return steps;
  }

  const keep = common(voters, confirmed);
  if (!sameNames(keep, voters)) {
    steps.push({
      type: 'writeSync',
      standbys: keep,
      quorum: 0,
      log: `Updating /sync key temporarily from ${listed(voters)} to ${listed(keep)}`,
    });
  }
  const value = formatStandbyNames(active, null, false);
  if (value !== currentValue)
    steps.push({ type: 'setStandbyNames', value, log: `Assigning synchronous_standby_names to ${value || "''"}` });
  // The placeholder never confirms: looking again for it would only delay each cycle.
  const awaited = active.filter((name) => name !== STRICT_PLACEHOLDER);
  if (awaited.length > 0 && !sameNames(confirmed, awaited)) steps.push({ type: 'recheck' });
  if (confirmed.length > 0 && !sameNames(confirmed, keep)) {
    steps.push({
      type: 'writeSync',
      standbys: confirmed,
      quorum: 0,
      log: `Synchronous standby status assigned to ${listed(confirmed)}`,
    });
  }
  return steps;
}
