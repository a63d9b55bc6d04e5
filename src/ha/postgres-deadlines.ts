import { EffectiveDynamicConfig } from '../config/config.types';

/**
 * How long each PostgreSQL action may take before it counts as failed (a start) or escalates (a stop:
 * immediate shutdown, then SIGKILL). `pgCtlMs` is `postgresql.pg_ctl_timeout`, Patroni's bound of a
 * start through pg_ctl (default 60 s); Stator applies it to its stops and promotions too.
 */
export type DeadlineSettings = Pick<
  EffectiveDynamicConfig,
  'ttl' | 'primary_start_timeout' | 'primary_stop_timeout' | 'synchronous_mode'
>;

/**
 * A start: `pg_ctl_timeout`; a primary's start may also take `primary_start_timeout` (its crash recovery,
 * which the reference waits for before it gives the lock up), whichever is longer.
 */
export function startTimeoutMs(role: 'primary' | 'replica', dynamic: DeadlineSettings, pgCtlMs: number): number {
  return role === 'primary' ? Math.max(dynamic.primary_start_timeout * 1000, pgCtlMs) : pgCtlMs;
}

/** A promotion: `pg_ctl promote` and the end of recovery, with a loop's slack as before. */
export function promoteTimeoutMs(loopWaitSeconds: number, pgCtlMs: number): number {
  return loopWaitSeconds * 1000 + pgCtlMs;
}

/** How long a demotion's shutdown may take before it escalates: half the ttl, at least a second. */
export function demoteStopTimeoutMs(ttlSeconds: number): number {
  return Math.max(1000, Math.min(60_000, ttlSeconds * 500));
}

/**
 * `primary_stop_timeout` as the reference reads it: seconds a primary's stop may take when synchronous
 * replication is on, null otherwise (0, or synchronous_mode off).
 */
export function primaryStopTimeoutMs(dynamic: DeadlineSettings): number | null {
  return dynamic.primary_stop_timeout > 0 && dynamic.synchronous_mode !== 'off'
    ? dynamic.primary_stop_timeout * 1000
    : null;
}

/**
 * A demotion's stop. The reference waits for ever unless `primary_stop_timeout` applies; Stator always
 * escalates within half the ttl, before another node may be promoted, so `primary_stop_timeout` can only
 * shorten that.
 */
export function demoteStopDeadlineMs(dynamic: DeadlineSettings): number {
  const halfTtl = demoteStopTimeoutMs(dynamic.ttl);
  const primary = primaryStopTimeoutMs(dynamic);
  return primary === null ? halfTtl : Math.min(primary, halfTtl);
}

/** A stop of a primary when the agent shuts down: `primary_stop_timeout` when it applies, else `pg_ctl_timeout`. */
export function shutdownStopDeadlineMs(isPrimary: boolean, dynamic: DeadlineSettings, pgCtlMs: number): number {
  const primary = isPrimary ? primaryStopTimeoutMs(dynamic) : null;
  return primary ?? pgCtlMs;
}
