import { assign, setup } from 'xstate';

/**
 * The `leadership` machine: whether this node holds the leader lock (reference-behavior 3.13,
 * "Leadership transitions"), and until when. Each lock acquisition, loss and release is a recorded
 * transition carrying the lease's end. Refreshes only move `validUntil` on: recording them would
 * flood the log every loop_wait, and a replay needs only who held the lock when.
 */
export type LeadershipEvent =
  | { type: 'LOCK_ACQUIRED'; reason: string; validUntil?: number }
  | { type: 'LOCK_REFRESHED'; validUntil: number; failsafe?: boolean }
  | { type: 'LOCK_LOST'; reason: string }
  | { type: 'LOCK_RELEASED'; reason: string };

export interface LeadershipContext {
  /** Epoch ms until which the lock is known to be ours; 0 when not leader. */
  validUntil: number;
  /** Held through failsafe mode since the DCS stopped answering; a refresh from the DCS ends it. */
  inFailsafe: boolean;
}

const NOT_HELD: LeadershipContext = { validUntil: 0, inFailsafe: false };

export const leadershipMachine = setup({
  types: { events: {} as LeadershipEvent, context: {} as LeadershipContext },
  actions: {
    hold: assign(({ event }) => ({
      validUntil: 'validUntil' in event ? (event.validUntil ?? 0) : 0,
      inFailsafe: event.type === 'LOCK_REFRESHED' && event.failsafe === true,
    })),
    letGo: assign(() => NOT_HELD),
  },
}).createMachine({
  id: 'leadership',
  initial: 'follower',
  context: NOT_HELD,
  states: {
    follower: {
      on: { LOCK_ACQUIRED: { target: 'leader', actions: 'hold' } },
    },
    leader: {
      on: {
        LOCK_REFRESHED: { actions: 'hold' },
        LOCK_LOST: { target: 'follower', actions: 'letGo' },
        LOCK_RELEASED: { target: 'follower', actions: 'letGo' },
      },
    },
  },
});
