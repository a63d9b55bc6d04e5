/**
 * Mutants the mutation run cannot catch, each with its reason (by mutant id, see mutants.ts):
 * - `equivalent`: the edit changes no decision at all (the mutated condition is always false in
 *   every configuration the code can run with, or an earlier check already decided);
 * - `outside the model`: the edit changes a decision the model never asks for (a feature or a
 *   configuration it does not model). These are not caught; they count against the score.
 */
export interface SurvivorReason {
  kind: 'equivalent' | 'outside the model';
  reason: string;
}

const outside = (reason: string): SurvivorReason => ({ kind: 'outside the model', reason });

export const EXPLAINED_SURVIVORS: Readonly<Record<string, SurvivorReason>> = {
  "ha/decide.ts decide: remove { type: 'releaseLock' }": outside('a lock holder with an empty data directory: bootstrap and cloning are not modelled'),
  "ha/decide.ts unresponsive: remove { type: 'killPostgres' }": outside('hung (unresponsive) PostgreSQL is not modelled'),
  "ha/decide.ts unresponsive: remove { type: 'releaseLock' }": outside('hung (unresponsive) PostgreSQL is not modelled'),
  'ha/decide.ts failsafeWhileDcsDown: remove OFFLINE_DEMOTE': outside('failsafe mode (a member refusing the leader) is not modelled'),
  "ha/decide.ts leaderCycle: remove { type: 'demote', mode: 'fast', restart: true, upstream: remote }": outside('standby clusters are not modelled'),
  "ha/decide.ts leaderCycle: remove { type: 'demote', mode: 'immediate', restart: true, upstream: null }": outside('the watchdog (mode required, unusable) is not modelled'),
  "ha/decide.ts leaderCycle: remove { type: 'releaseLock' } #3": outside('the watchdog (mode required, unusable) is not modelled'),
  "ha/recover.ts recover: remove { type: 'releaseLock', demote: 'crashed' }": outside('primary_start_timeout 0: the model runs with the default, 300'),
  "ha/recover.ts recover: remove { type: 'releaseLock', demote: 'failed_start' }": outside('start failures are not modelled'),
  'ha/leader-race.ts healthiest: skip if (Object.keys(failsafe).length > 0 && !Object.hasOwn(failsafe, local.name))': outside('failsafe mode is not modelled (without it the condition is always false: equivalent there)'),
  'ha/leader-race.ts healthiest: skip if (local.watchdogFailed && !config.pause)': outside('the watchdog is not modelled'),
  'ha/leader-race.ts healthiest: skip if (config.check_timeline && ownTimeline < timeline)': outside('check_timeline: the model runs with the default, off'),
  'ha/leader-race.ts goodCandidates: drop !peer.watchdogFailed': outside('the watchdog is not modelled'),
  'ha/leader-race.ts goodCandidates: drop !config.check_timeline || (peer.timeline ?? 0) >= ownTimeline': outside('check_timeline: the model runs with the default, off'),
};
