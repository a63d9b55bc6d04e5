import { assign, setup } from 'xstate';

/**
 * The `role` machine: the node role the member key publishes (reference-behavior 3.13), and the
 * member a replica streams from. Driven by the HA loop; every change of either is recorded.
 */
export type RoleEvent =
  | { type: 'DETECTED_PRIMARY' }
  | { type: 'DETECTED_REPLICA' }
  | { type: 'DETECTED_DEMOTED' }
  | { type: 'BOOTSTRAP_STARTED' }
  | { type: 'CLONE_COMPLETED' }
  | { type: 'DATA_REMOVED' }
  | { type: 'PROMOTE_STARTED' }
  | { type: 'PROMOTE_COMPLETED' }
  | { type: 'PROMOTE_FAILED' }
  | { type: 'PRIMARY_CONFIRMED' }
  | { type: 'DEMOTED' }
  /** The lock holder's PostgreSQL failed to start: it gives the lock up demoted (the reference's `post_recover`, which fires on_role_change demoted). */
  | { type: 'GAVE_UP_AFTER_FAILED_START' }
  | { type: 'FOLLOWING' }
  | { type: 'STANDBY_LEADER' }
  /** The member this node's PostgreSQL is told to stream from (null: none, as a primary). */
  | { type: 'UPSTREAM_CHANGED'; upstream: string | null };

export type RoleName = 'uninitialized' | 'replica' | 'primary' | 'standby_leader' | 'promoted' | 'demoted';

export const roleMachine = setup({
  types: { events: {} as RoleEvent, context: {} as { upstream: string | null } },
}).createMachine({
  id: 'role',
  initial: 'uninitialized',
  context: { upstream: null },
  on: {
    DATA_REMOVED: '.uninitialized',
    UPSTREAM_CHANGED: { actions: assign({ upstream: ({ event }) => event.upstream }) },
  },
  states: {
    uninitialized: {
      on: {
        DETECTED_PRIMARY: 'primary',
        DETECTED_REPLICA: 'replica',
        DETECTED_DEMOTED: 'demoted',
        BOOTSTRAP_STARTED: 'primary',
        CLONE_COMPLETED: 'replica',
      },
    },
    replica: {
      on: {
        PROMOTE_STARTED: 'promoted',
        PRIMARY_CONFIRMED: 'primary',
        STANDBY_LEADER: 'standby_leader',
      },
    },
    promoted: {
      on: {
        PROMOTE_COMPLETED: 'primary',
        PROMOTE_FAILED: 'replica',
        DEMOTED: 'demoted',
        GAVE_UP_AFTER_FAILED_START: 'demoted',
      },
    },
    primary: {
      on: {
        DEMOTED: 'demoted',
        GAVE_UP_AFTER_FAILED_START: 'demoted',
      },
    },
    demoted: {
      on: {
        FOLLOWING: 'replica',
        PRIMARY_CONFIRMED: 'primary',
        PROMOTE_STARTED: 'promoted',
        STANDBY_LEADER: 'standby_leader',
      },
    },
    standby_leader: {
      on: {
        // standby_cluster removed: the standby leader is promoted and the cluster is on its own.
        PROMOTE_STARTED: 'promoted',
        DEMOTED: 'demoted',
        GAVE_UP_AFTER_FAILED_START: 'demoted',
        FOLLOWING: 'replica',
      },
    },
  },
});
