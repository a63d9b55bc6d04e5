import { CallbackAction } from '../config/config.types';

/** What the policy looks at: a recorded machine transition. */
export interface TransitionFact {
  type: string;
  from: string | null;
  to: string | null;
  cause: string;
}

/** A callback to run: Patroni's action and the role argument it passes. */
export interface CallbackCall {
  action: CallbackAction;
  role: string;
}

const top = (state: string | null) => (state ?? '').split('.')[0];

/** The role a callback is told, as Patroni names it: `promoted` is `primary`, a node not yet placed is a `replica`. */
export function callbackRole(role: string | null): string {
  if (role === 'promoted') return 'primary';
  if (role === null || role === 'uninitialized') return 'replica';
  return role;
}

/**
 * Which callback a transition of the `postgres` or `role` machine fires, as the reference fires them
 * (reference-behavior 3.3, 3.4, 3.12): `on_start` when PostgreSQL comes up after a start (not one that
 * brings a demoted primary back as a replica: that is `on_role_change`), `on_restart`
 * after a restart (and not on_stop + on_start), `on_stop` when a stop completes, `on_reload` when a
 * configuration reload succeeded, `on_role_change` when the role becomes primary (at promotion),
 * replica (a former primary following) or standby_leader, and `demoted` when a lock holder gives the lock up
 * because its PostgreSQL failed to start. `currentRole` is the role machine's state.
 */
export function callbackFor(fact: TransitionFact, currentRole: string | null): CallbackCall | null {
  if (fact.type === 'postgres.transition') {
    const [from, to] = [top(fact.from), top(fact.to)];
    const role = callbackRole(currentRole);
    // A start that is part of a role change (a demoted primary coming back as a replica) fires on_role_change instead, as in the reference.
    if (to === 'running' && (from === 'starting' || from === 'bootstrap_starting'))
      return currentRole === 'demoted' ? null : { action: 'on_start', role };
    if (to === 'running' && from === 'restarting') return { action: 'on_restart', role };
    if (to === 'stopped' && from === 'stopping') return { action: 'on_stop', role };
    if (
      fact.from === 'running.reconfiguring' &&
      fact.to === 'running.idle' &&
      fact.cause.startsWith('xstate.done.actor')
    )
      return { action: 'on_reload', role };
    return null;
  }
  if (fact.type === 'role.transition') {
    const [from, to] = [top(fact.from), top(fact.to)];
    if (from === to || from === '' || from === 'uninitialized') return null;
    if (to === 'promoted' || (to === 'primary' && from !== 'promoted'))
      return { action: 'on_role_change', role: 'primary' };
    if (to === 'replica' || to === 'standby_leader') return { action: 'on_role_change', role: to };
    if (to === 'demoted' && fact.cause === 'GAVE_UP_AFTER_FAILED_START')
      return { action: 'on_role_change', role: 'demoted' };
  }
  return null;
}
