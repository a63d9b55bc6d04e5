import { ActionKind } from './model-types';

/**
 * The mutation run's scenarios for the faults that remove the last layer (issue 34, part 2): failsafe
 * mode with the leader or a member cut off (from the DCS, from its peers), a member back from a crash
 * that `/failsafe` does not name yet, and a watchdog that cannot be activated. Each runs with the
 * setting it needs (`failsafe_mode: true`, watchdog mode `required`).
 */
export interface FaultScenario {
  name: string;
  kinds: ActionKind[];
  faults?: number;
  writes?: number;
  states?: number;
  failsafe?: boolean;
  watchdog?: boolean;
}

export const FAULT_SCENARIOS: FaultScenario[] = [
  {
    name: 'failsafe, the leader or a member cut off',
    kinds: ['cycle', 'tick', 'complete', 'dcsCut', 'peerCut'],
    faults: 2,
    writes: 0,
    failsafe: true,
  },
  // The member's key runs out while its agent is down, so the leader's next /failsafe leaves it out; the leader is cut
  // off right after the member is back: the member must not race (its race would not even probe the leader, whose key is gone).
  {
    name: 'failsafe, a member back that /failsafe does not name',
    kinds: ['cycle', 'tick', 'complete', 'agentCrash', 'agentRestart', 'dcsCut'],
    faults: 2,
    writes: 0,
    states: 20_000,
    failsafe: true,
  },
  {
    name: 'a watchdog that cannot be activated',
    kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'watchdogFail', 'agentCrash', 'agentRestart'],
    faults: 2,
    watchdog: true,
  },
];
