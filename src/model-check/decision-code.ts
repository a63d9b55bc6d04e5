import { decide } from '../ha/decide';
import { fenceSafetyMarginMs } from '../ha/leader-lock';
import { pendingFailover } from '../ha/leader-race';
import { planPriority } from '../ha/sync/priority-plan';
import { planQuorum } from '../ha/sync/quorum-plan';
import { quorumTransitions } from '../ha/sync/quorum-resolver';
import { SyncReadiness } from '../ha/sync/readiness';
import { pickSynchronous, quorumAcknowledgedPosition, syncCandidates } from '../ha/sync/sync-candidates';
import { syncKeyValue, syncQuorumOf } from '../ha/sync/sync-key';

/**
 * The decision code the model runs: decide(), the sync planners and the fence's margin. The
 * checker takes it as a value so that the mutation run can hand it a copy of these modules with one
 * edit (mutant-loader.ts); the agent imports the modules directly and has no such input.
 */
export interface DecisionCode {
  decide: typeof decide;
  pendingFailover: typeof pendingFailover;
  fenceSafetyMarginMs: typeof fenceSafetyMarginMs;
  planPriority: typeof planPriority;
  planQuorum: typeof planQuorum;
  quorumTransitions: typeof quorumTransitions;
  SyncReadiness: typeof SyncReadiness;
  pickSynchronous: typeof pickSynchronous;
  quorumAcknowledgedPosition: typeof quorumAcknowledgedPosition;
  syncCandidates: typeof syncCandidates;
  syncKeyValue: typeof syncKeyValue;
  syncQuorumOf: typeof syncQuorumOf;
}

export const REAL_DECISION_CODE: DecisionCode = {
  decide,
  pendingFailover,
  fenceSafetyMarginMs,
  planPriority,
  planQuorum,
  quorumTransitions,
  SyncReadiness,
  pickSynchronous,
  quorumAcknowledgedPosition,
  syncCandidates,
  syncKeyValue,
  syncQuorumOf,
};

/** Where each part of DecisionCode lives, relative to src/: what the mutant loader loads it from. */
export const DECISION_CODE_MODULES: Record<keyof DecisionCode, string> = {
  decide: 'ha/decide.ts',
  pendingFailover: 'ha/leader-race.ts',
  fenceSafetyMarginMs: 'ha/leader-lock.ts',
  planPriority: 'ha/sync/priority-plan.ts',
  planQuorum: 'ha/sync/quorum-plan.ts',
  quorumTransitions: 'ha/sync/quorum-resolver.ts',
  SyncReadiness: 'ha/sync/readiness.ts',
  pickSynchronous: 'ha/sync/sync-candidates.ts',
  quorumAcknowledgedPosition: 'ha/sync/sync-candidates.ts',
  syncCandidates: 'ha/sync/sync-candidates.ts',
  syncKeyValue: 'ha/sync/sync-key.ts',
  syncQuorumOf: 'ha/sync/sync-key.ts',
};
