import { BOOLEAN_RULE, describeValue, isMapping, parsePatroniBoolean, toSeconds } from './config-values';

/* The type and range of every key of a dynamic configuration that Stator or Patroni interprets (validateDynamicConfigKeys). */

/** Sites other than the leader's a commit may have to reach: more than a handful of data centres per cluster is a typo. */
export const MAX_SYNCHRONOUS_SITES = 15;

/** A drain past a minute would be a typo: the failover gap grows by it. */
export const MAX_LOAD_BALANCER_DRAIN_MS = 60_000;

/**
 * Lower bounds of the timing keys. Patroni enforces ttl >= 20 and retry_timeout >= 3; Stator deliberately allows
 * ttl >= 5 and retry_timeout >= 1 so that fast lab and test clusters (ttl 10, loop_wait 2) work. Safety does not rest
 * on these bounds but on the invariant loop_wait + 2*retry_timeout <= ttl, which is kept exactly as in Patroni.
 */
export const TIMING_MINIMUMS = Object.freeze({ ttl: 5, loop_wait: 1, retry_timeout: 1 });

/**
 * Upper bounds: what etcd leases, PostgreSQL and Node's timers (2^31 - 1 ms, about 24.8 days) can honour
 * with room to spare. A day is far beyond any HA timing in use, and a value past it is a typo.
 */
export const MAX_SECONDS = 86_400;
export const TIMING_MAXIMUMS = Object.freeze({ ttl: MAX_SECONDS, loop_wait: MAX_SECONDS, retry_timeout: MAX_SECONDS });
/** More timelines than a cluster could make in its life; the bound of `max_timelines_history`. */
export const MAX_TIMELINES_HISTORY = 1_000_000;
/** `member_slots_ttl` may be as long as a month: a member away for maintenance keeps its slot. */
export const MAX_MEMBER_SLOTS_TTL = 30 * 86_400;
/** Bytes of WAL: LSNs are 64-bit, but numbers past 2^53 lose precision in JSON readers. */
export const MAX_BYTES = Number.MAX_SAFE_INTEGER;

type ValueRule = { rule: string; accepts: (value: unknown) => boolean };

const integerBetween = (minimum: number, maximum: number): ValueRule => ({
  rule: `must be an integer from ${minimum} to ${maximum}`,
  accepts: (value) => Number.isInteger(value) && (value as number) >= minimum && (value as number) <= maximum,
});
const seconds = (minimum: number) => integerBetween(minimum, MAX_SECONDS);
export const MEMBER_SLOTS_TTL_RULE: ValueRule = {
  rule: `must be seconds from 0 to ${MAX_MEMBER_SLOTS_TTL}, as an integer or with a unit (ms, s, min, h, d)`,
  accepts: (value) => {
    const seconds = toSeconds(value);
    return seconds !== undefined && seconds >= 0 && seconds <= MAX_MEMBER_SLOTS_TTL;
  },
};
const booleanRule: ValueRule = { rule: BOOLEAN_RULE, accepts: (value) => parsePatroniBoolean(value) !== undefined };
const mappingRule: ValueRule = { rule: 'must be a mapping', accepts: isMapping };

/** Rules for the keys Stator or Patroni interpret; any other key is allowed and kept. */
export const TOP_LEVEL_RULES: Readonly<Record<string, ValueRule>> = Object.freeze({
  ttl: integerBetween(TIMING_MINIMUMS.ttl, TIMING_MAXIMUMS.ttl),
  loop_wait: integerBetween(TIMING_MINIMUMS.loop_wait, TIMING_MAXIMUMS.loop_wait),
  retry_timeout: integerBetween(TIMING_MINIMUMS.retry_timeout, TIMING_MAXIMUMS.retry_timeout),
  maximum_lag_on_failover: integerBetween(0, MAX_BYTES),
  maximum_lag_on_syncnode: integerBetween(-1, MAX_BYTES),
  primary_start_timeout: seconds(0),
  postgres_unresponsive_timeout: seconds(0),
  master_start_timeout: seconds(0),
  primary_stop_timeout: seconds(0),
  master_stop_timeout: seconds(0),
  synchronous_node_count: integerBetween(1, 255),
  synchronous_site_count: integerBetween(0, MAX_SYNCHRONOUS_SITES),
  max_timelines_history: integerBetween(0, MAX_TIMELINES_HISTORY),
  member_slots_ttl: MEMBER_SLOTS_TTL_RULE,
  load_balancer_drain_ms: integerBetween(0, MAX_LOAD_BALANCER_DRAIN_MS),
  primary_race_backoff: seconds(0),
  check_timeline: booleanRule,
  pause: booleanRule,
  failsafe_mode: booleanRule,
  synchronous_mode_strict: booleanRule,
  synchronous_mode: {
    rule: `${BOOLEAN_RULE} or "quorum"`,
    accepts: (value) => value === 'quorum' || parsePatroniBoolean(value) !== undefined,
  },
  postgresql: mappingRule,
  standby_cluster: mappingRule,
  slots: mappingRule,
  ignore_slots: { rule: 'must be a list', accepts: Array.isArray },
});

export const POSTGRESQL_RULES: Readonly<Record<string, ValueRule>> = Object.freeze({
  use_pg_rewind: booleanRule,
  use_slots: booleanRule,
  remove_data_directory_on_rewind_failure: booleanRule,
  remove_data_directory_on_diverged_timelines: booleanRule,
  parameters: mappingRule,
  use_unix_socket: booleanRule,
  use_unix_socket_repl: booleanRule,
});

/** Each key of `doc` that has a rule and breaks it, as `<prefix><key>: <rule>, got <value>`. */
export function checkKeys(
  doc: Record<string, unknown>,
  rules: Readonly<Record<string, ValueRule>>,
  prefix: string,
): string[] {
  const problems: string[] = [];
  for (const [key, value] of Object.entries(doc)) {
    // Own keys only: `constructor` or `toString` must not find Object's methods as rules.
    const rule = Object.hasOwn(rules, key) ? rules[key] : undefined;
    if (rule && value !== null && !rule.accepts(value)) {
      problems.push(`${prefix}${key}: ${rule.rule}, got ${describeValue(value)}`);
    }
  }
  return problems;
}
