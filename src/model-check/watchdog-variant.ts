import { DecisionMutation } from './model-types';

/** The broken variant of the watchdog rule: decide() never hears that a watchdog cannot be activated. */
export const IGNORING_THE_WATCHDOG: DecisionMutation = {
  name: 'ignoring a watchdog that cannot be activated',
  snapshot: (s) => ({
    ...s,
    local: { ...s.local, watchdogFailed: null },
    peers: s.peers?.map((p) => ({ ...p, watchdogFailed: false })),
  }),
};
