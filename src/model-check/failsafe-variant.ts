import { DecisionMutation } from './model-types';

/**
 * The broken variant of failsafe mode (issue 34's hand-made mutant): the leader keeps running although
 * not every member accepted its call, as if every round were accepted.
 */
export const HOLDING_WITHOUT_EVERY_MEMBER: DecisionMutation = {
  name: 'holding in failsafe without every member',
  snapshot: (s) =>
    s.failsafeResult && !s.failsafeResult.accepted
      ? { ...s, failsafeResult: { ...s.failsafeResult, accepted: true, refusals: [] } }
      : s,
};

/** The members' side broken: a member that accepted a failsafe leader races for the key all the same. */
export const RACING_PAST_THE_FAILSAFE_LEADER: DecisionMutation = {
  name: 'racing although a failsafe leader was accepted',
  snapshot: (s) => (s.failsafeLeader ? { ...s, failsafeLeader: null } : s),
};
