import { DecisionMutation } from './model-types';
import { REAL_DECISION_CODE } from './decision-code';

/** The broken variant: the synchronous standbys picked as if synchronous_site_count were 0. */
export const IGNORING_SITES: DecisionMutation = {
  name: 'picking synchronous standbys without the site rule',
  code: {
    ...REAL_DECISION_CODE,
    pickSynchronous: (candidates, ready, leaderFlushLsn, config, acknowledgedUpTo, leaderSite) =>
      REAL_DECISION_CODE.pickSynchronous(
        candidates,
        ready,
        leaderFlushLsn,
        { ...config, synchronous_site_count: 0 },
        acknowledgedUpTo,
        leaderSite,
      ),
  },
};
