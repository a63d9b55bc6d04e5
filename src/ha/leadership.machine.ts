import { setup } from 'xstate';

/**
 * The `leadership` machine: whether this node holds the leader lock (reference-behavior 3.13,
 * "Leadership transitions"). Each lock acquisition, loss and release is a recorded transition.
 * Refreshes are not transitions: they would flood the log every loop_wait.
 */
export type LeadershipEvent =
  | { type: 'LOCK_ACQUIRED'; reason: string }
  | { type: 'LOCK_LOST'; reason: string }
  | { type: 'LOCK_RELEASED'; reason: string };

export const leadershipMachine = setup({
  types: { events: {} as LeadershipEvent },
}).createMachine({
  id: 'leadership',
  initial: 'follower',
  states: {
    follower: {
      on: { LOCK_ACQUIRED: 'leader' },
    },
    leader: {
      on: {
        LOCK_LOST: 'follower',
        LOCK_RELEASED: 'follower',
      },
    },
  },
});
