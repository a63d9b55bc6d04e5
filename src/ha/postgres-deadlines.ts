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

/**
 * The slack a procedure's deadline adds to the bounds of its own steps: a ttl, for its DCS writes and
 * readings. The task deadline only catches a step that outlives its own bound; it never cuts one short.
 */
export function procedureSlackMs(ttlSeconds: number): number {
  return ttlSeconds * 1000;
}

/** The reference's `promote` wait is bounded in Stator by the postgres machine's promotion, at most 120 s of waiting. */
const PROMOTE_WAIT_MS = 120_000;
/** A reconfiguration before the promotion (synchronous_standby_names) waits at most this. */
const RECONFIGURE_WAIT_MS = 30_000;

/**
 * The deadline of each background procedure of the HA cycle (the `task` machine's `busy`), in ms; null for
 * the procedures that copy data (clone, rejoin, reinitialize, a standby leader's bootstrap) or run the
 * operator's scripts (post_bootstrap): as the reference, they run as long as the copy or script takes.
 */
export function procedureDeadlineMs(
  procedure:
    | { kind: 'start'; startMs: number }
    | { kind: 'restart'; stopMs: number; startMs: number }
    | { kind: 'promote'; drainMs: number; promoteMs: number }
    | { kind: 'stop'; stopMs: number }
    | { kind: 'switchover'; drainMs: number; stopMs: number },
  ttlSeconds: number,
): number {
  const slack = procedureSlackMs(ttlSeconds);
  switch (procedure.kind) {
    case 'start':
      return procedure.startMs + slack;
    case 'restart':
      return procedure.stopMs + procedure.startMs + slack;
    case 'promote':
      return procedure.drainMs + RECONFIGURE_WAIT_MS + Math.max(procedure.promoteMs, PROMOTE_WAIT_MS) + slack;
    case 'stop':
      return procedure.stopMs + slack;
    case 'switchover':
      return procedure.drainMs + procedure.stopMs + slack;
  }
}
