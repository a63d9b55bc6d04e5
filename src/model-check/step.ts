import { applyAction } from './actions';
import { Action, Bounds, DecisionMutation, Violation } from './model-types';
import { checkPromotion, checkRace, checkState } from './invariants';
import { ClusterModel } from './model';
import { checkQuorumGap } from './quorum-gap';
import { checkRacePriority } from './race-priority';
import { checkRequestAnswer, checkRequestWinner } from './request-rules';
import { checkPausedKeyHolder, checkPausedPrimaryTakesKey } from './pause-rules';
import { checkTimelineTakeover } from './timeline-rule';
import { checkSiteRule } from './site-rule';
import { checkWatchdogPromotion } from './watchdog-rule';
import { checkNoSync, checkStandbyCluster, checkTimelineSetting } from './settings-rules';
import { checkCommitColumn } from './commit-columns';
import { factEvents, ModelEvent, replayMismatch, transitionEvents } from './recording';

export interface CheckedStep {
  next: ClusterModel;
  events: ModelEvent[];
  violation: Violation | null;
}

/** One step with every per-step invariant judged: the promotion it decided, the replay of its events, the state it reaches. */
export function checkedStep(c: ClusterModel, action: Action, bounds: Bounds, mutation?: DecisionMutation): CheckedStep {
  const { next, facts, cycle } = applyAction(c, action, bounds, mutation);
  const events = [...factEvents(facts), ...transitionEvents(c, next, action.label, mutation?.dropsEvent)];
  const promotion = cycle?.promotion
    ? (checkPromotion(c, cycle.promotion) ??
      checkRace(c, cycle.promotion) ??
      checkRacePriority(c, cycle.promotion) ??
      checkWatchdogPromotion(c, cycle.promotion) ??
      checkTimelineSetting(c, cycle.promotion) ??
      checkRequestWinner(c, cycle.promotion))
    : null;
  const mismatch = replayMismatch(c, next, events);
  const violation =
    promotion ??
    (mismatch
      ? {
          invariant: 'replay' as const,
          message: `replaying the step's events does not rebuild the projections: ${mismatch}`,
        }
      : null) ??
    checkState(next) ??
    checkSiteRule(next) ??
    checkNoSync(next) ??
    checkCommitColumn(next) ??
    checkStandbyCluster(next) ??
    checkQuorumGap(next) ??
    checkRequestAnswer(c, next, action) ??
    checkPausedKeyHolder(c, next, action) ??
    checkPausedPrimaryTakesKey(c, next, action) ??
    checkTimelineTakeover(c, next, action);
  return { next, events, violation };
}
