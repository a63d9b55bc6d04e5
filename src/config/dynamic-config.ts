import { DynamicConfig, EffectiveDynamicConfig } from './config.types';
import { readIgnoreSlots, readPermanentSlots } from './slots-config';
import { readStandbyCluster } from './standby-cluster-config';
import { configurationFilesProblems, readDynamicConfigurationFiles } from './dynamic-files-config';
import {
  describeValue,
  isMapping,
  isParameterValue,
  PARAMETER_RULE,
  parameterLabel,
  parameterProblem,
  parsePatroniBoolean,
  toInteger,
  toSeconds,
} from './config-values';
import {
  checkKeys,
  MAX_BYTES,
  MAX_LOAD_BALANCER_DRAIN_MS,
  MAX_MEMBER_SLOTS_TTL,
  MAX_SECONDS,
  MAX_SYNCHRONOUS_SITES,
  MAX_TIMELINES_HISTORY,
  MEMBER_SLOTS_TTL_RULE,
  POSTGRESQL_RULES,
  TIMING_MINIMUMS,
  TOP_LEVEL_RULES,
} from './dynamic-config-rules';

/** Defaults of the dynamic settings (reference-behavior section 5; `use_pg_rewind` is on in Stator, off in Patroni). */
export const DYNAMIC_CONFIG_DEFAULTS: Readonly<
  Omit<
    EffectiveDynamicConfig,
    'parameters' | 'slots' | 'ignore_slots' | 'standby_cluster' | 'pg_hba' | 'pg_ident' | 'recovery_conf'
  >
> = Object.freeze({
  ttl: 30,
  loop_wait: 10,
  retry_timeout: 10,
  maximum_lag_on_failover: 1048576,
  check_timeline: false,
  primary_start_timeout: 300,
  primary_stop_timeout: 0,
  max_timelines_history: 0,
  /** Patroni: false (a broken former primary waits for a manual reinitialize); Stator clones it again. */
  remove_data_directory_on_rewind_failure: true,
  remove_data_directory_on_diverged_timelines: true,
  pause: false,
  use_pg_rewind: true,
  use_slots: true,
  /** Half of the default ttl; when the key is absent it follows the ttl in use (see unresponsiveDefault). */
  postgres_unresponsive_timeout: 15,
  synchronous_mode: 'off',
  synchronous_mode_strict: false,
  synchronous_node_count: 1,
  synchronous_site_count: 0,
  maximum_lag_on_syncnode: -1,
  failsafe_mode: false,
  member_slots_ttl: 1800,
  /** Longer than the shipped HAProxy configuration's 500 ms check interval, with room for a busy machine (docs/load-balancers.md). */
  load_balancer_drain_ms: 750,
  primary_race_backoff: 0,
});

/** Without `postgres_unresponsive_timeout`: half the ttl, so a hung primary is ended well before its lease would expire. */
export function unresponsiveDefault(ttl: number): number {
  return Math.max(2, Math.floor(ttl / 2));
}

export interface EffectiveDynamicConfigResult {
  config: EffectiveDynamicConfig;
  /** One sentence per value that was not used as written (clamped, or unusable and replaced by a default). */
  adjustments: string[];
}

/**
 * The dynamic settings the HA loop runs with. As in Patroni, the DCS `/config` replaces the local `bootstrap.dcs`
 * as a whole once it exists (keys it lacks take the defaults, not the bootstrap values): every node must run with
 * the same settings, and each node's file may carry a different bootstrap section.
 *
 * Never throws: a DCS document may have been written by anyone (including Patroni nodes, which do not validate).
 * Unusable values fall back to the defaults and the clamping rules of reference-behavior 1.6 apply, with Stator's
 * lower minimums (see TIMING_MINIMUMS).
 */
export function effectiveDynamicConfig(
  fromDcs: DynamicConfig | null,
  bootstrap: DynamicConfig,
): EffectiveDynamicConfigResult {
  const source = fromDcs ?? bootstrap;
  const origin = fromDcs ? 'the DCS configuration' : 'bootstrap.dcs';
  const adjustments: string[] = [];
  const postgresql = isMapping(source.postgresql) ? source.postgresql : {};

  const integer = (key: string, value: unknown, fallback: number, maximum = MAX_SECONDS): number => {
    if (value === undefined || value === null) return fallback;
    const parsed = toInteger(value);
    if (parsed === undefined) {
      adjustments.push(`${key} ${describeValue(value)} in ${origin} is not an integer; using the default ${fallback}`);
      return fallback;
    }
    if (parsed > maximum) {
      adjustments.push(`${key} lowered from ${describeValue(value)} to ${maximum} (the maximum)`);
      return maximum;
    }
    return parsed;
  };
  const boolean = (key: string, value: unknown, fallback: boolean): boolean => {
    if (value === undefined || value === null) return fallback;
    const parsed = parsePatroniBoolean(value);
    if (parsed !== undefined) return parsed;
    adjustments.push(`${key} ${describeValue(value)} in ${origin} is not a boolean; using the default ${fallback}`);
    return fallback;
  };

  const defaults = DYNAMIC_CONFIG_DEFAULTS;
  const timing = clampTimings(
    {
      ttl: integer('ttl', source.ttl, defaults.ttl),
      loop_wait: integer('loop_wait', source.loop_wait, defaults.loop_wait),
      retry_timeout: integer('retry_timeout', source.retry_timeout, defaults.retry_timeout),
    },
    adjustments,
  );

  const parameters: EffectiveDynamicConfig['parameters'] = {};
  if (isMapping(postgresql.parameters)) {
    for (const [name, value] of Object.entries(postgresql.parameters)) {
      if (isParameterValue(value) && parameterProblem(name, value) === null) parameters[name] = value;
      else {
        const parameter = `postgresql.parameters.${parameterLabel(name)} ${describeValue(value)}`;
        adjustments.push(`${parameter} in ${origin} ignored: ${parameterProblem(name, value) ?? PARAMETER_RULE}`);
      }
    }
  }

  const standbyCluster = readStandbyCluster(source.standby_cluster, adjustments);
  const synchronousMode =
    source.synchronous_mode === 'quorum'
      ? 'quorum'
      : boolean('synchronous_mode', source.synchronous_mode, false)
        ? 'on'
        : 'off';
  return {
    config: {
      ...timing,
      maximum_lag_on_failover: integer(
        'maximum_lag_on_failover',
        source.maximum_lag_on_failover,
        defaults.maximum_lag_on_failover,
        MAX_BYTES,
      ),
      check_timeline: boolean('check_timeline', source.check_timeline, defaults.check_timeline),
      primary_start_timeout: integer(
        'primary_start_timeout',
        source.primary_start_timeout ?? source.master_start_timeout,
        defaults.primary_start_timeout,
      ),
      primary_stop_timeout: integer(
        'primary_stop_timeout',
        source.primary_stop_timeout ?? source.master_stop_timeout,
        defaults.primary_stop_timeout,
      ),
      max_timelines_history: Math.max(
        0,
        integer(
          'max_timelines_history',
          source.max_timelines_history,
          defaults.max_timelines_history,
          MAX_TIMELINES_HISTORY,
        ),
      ),
      remove_data_directory_on_rewind_failure: boolean(
        'postgresql.remove_data_directory_on_rewind_failure',
        postgresql.remove_data_directory_on_rewind_failure,
        defaults.remove_data_directory_on_rewind_failure,
      ),
      remove_data_directory_on_diverged_timelines: boolean(
        'postgresql.remove_data_directory_on_diverged_timelines',
        postgresql.remove_data_directory_on_diverged_timelines,
        defaults.remove_data_directory_on_diverged_timelines,
      ),
      pause: boolean('pause', source.pause, defaults.pause),
      use_pg_rewind: boolean('postgresql.use_pg_rewind', postgresql.use_pg_rewind, defaults.use_pg_rewind),
      use_slots: boolean('postgresql.use_slots', postgresql.use_slots, defaults.use_slots),
      postgres_unresponsive_timeout: integer(
        'postgres_unresponsive_timeout',
        source.postgres_unresponsive_timeout,
        unresponsiveDefault(timing.ttl),
      ),
      // As Patroni: a standby cluster has no synchronous replication (its leader acknowledges nothing to clients), so the
      // setting waits, stored, until the cluster is promoted.
      synchronous_mode: standbyCluster !== null ? 'off' : synchronousMode,
      synchronous_mode_strict: boolean(
        'synchronous_mode_strict',
        source.synchronous_mode_strict,
        defaults.synchronous_mode_strict,
      ),
      synchronous_node_count: Math.max(
        1,
        integer('synchronous_node_count', source.synchronous_node_count, defaults.synchronous_node_count, 255),
      ),
      synchronous_site_count: Math.max(
        0,
        integer(
          'synchronous_site_count',
          source.synchronous_site_count,
          defaults.synchronous_site_count,
          MAX_SYNCHRONOUS_SITES,
        ),
      ),
      maximum_lag_on_syncnode: syncNodeLag(source.maximum_lag_on_syncnode),
      failsafe_mode: boolean('failsafe_mode', source.failsafe_mode, defaults.failsafe_mode),
      member_slots_ttl: memberSlotsTtl(source.member_slots_ttl, origin, adjustments),
      load_balancer_drain_ms: Math.max(
        0,
        integer(
          'load_balancer_drain_ms',
          source.load_balancer_drain_ms,
          defaults.load_balancer_drain_ms,
          MAX_LOAD_BALANCER_DRAIN_MS,
        ),
      ),
      primary_race_backoff: Math.max(
        0,
        integer('primary_race_backoff', source.primary_race_backoff, defaults.primary_race_backoff),
      ),
      parameters,
      ...readDynamicConfigurationFiles(postgresql, origin, parameterProblem, adjustments),
      standby_cluster: standbyCluster,
      // A permanent slot's cluster_type keeps it in a primary cluster only, or in a standby cluster only.
      slots: readPermanentSlots(source.slots, adjustments, standbyCluster !== null),
      ignore_slots: readIgnoreSlots(source.ignore_slots),
    },
    adjustments,
  };
}

function memberSlotsTtl(value: unknown, origin: string, adjustments: string[]): number {
  if (value === undefined || value === null) return DYNAMIC_CONFIG_DEFAULTS.member_slots_ttl;
  const seconds = toSeconds(value);
  if (seconds !== undefined && seconds >= 0 && seconds <= MAX_MEMBER_SLOTS_TTL) return seconds;
  adjustments.push(
    `member_slots_ttl ${describeValue(value)} in ${origin} is not ${MEMBER_SLOTS_TTL_RULE.rule.replace(/^must be /, '')}; using the default ${DYNAMIC_CONFIG_DEFAULTS.member_slots_ttl}`,
  );
  return DYNAMIC_CONFIG_DEFAULTS.member_slots_ttl;
}

/** `maximum_lag_on_syncnode`: bytes, or -1 (and any value up to 0) for "never swap a lagging standby". */
function syncNodeLag(value: unknown): number {
  const parsed = value === undefined || value === null ? undefined : toInteger(value);
  return parsed === undefined || parsed <= 0 ? -1 : Math.min(parsed, MAX_BYTES);
}

interface Timings {
  ttl: number;
  loop_wait: number;
  retry_timeout: number;
}

/** Patroni's `_validate_and_adjust_timeouts`: raise to the minimums, then lower loop_wait first, retry_timeout last. */
function clampTimings(requested: Timings, adjustments: string[]): Timings {
  const timing = { ...requested };
  for (const key of ['loop_wait', 'retry_timeout', 'ttl'] as const) {
    if (timing[key] < TIMING_MINIMUMS[key]) {
      adjustments.push(`${key} raised from ${timing[key]} to ${TIMING_MINIMUMS[key]} (the minimum)`);
      timing[key] = TIMING_MINIMUMS[key];
    }
  }
  const { ttl, loop_wait: loopWait, retry_timeout: retryTimeout } = timing;
  const because = `because loop_wait + 2*retry_timeout must be <= ttl (${ttl})`;
  const minimumLoopWait = TIMING_MINIMUMS.loop_wait;
  if (minimumLoopWait + 2 * retryTimeout > ttl) {
    timing.loop_wait = minimumLoopWait;
    timing.retry_timeout = Math.floor((ttl - minimumLoopWait) / 2);
    if (loopWait !== minimumLoopWait) {
      adjustments.push(`loop_wait lowered from ${loopWait} to ${minimumLoopWait} ${because}`);
    }
    adjustments.push(`retry_timeout lowered from ${retryTimeout} to ${timing.retry_timeout} ${because}`);
  } else if (loopWait + 2 * retryTimeout > ttl) {
    timing.loop_wait = ttl - 2 * retryTimeout;
    adjustments.push(`loop_wait lowered from ${loopWait} to ${timing.loop_wait} ${because}`);
  }
  return timing;
}

/**
 * Every key's type and range in a dynamic configuration (`bootstrap.dcs`, PATCH/PUT `/config`). The timing
 * invariant loop_wait + 2*retry_timeout <= ttl is not a refusal: as Patroni, the values are stored and clamped
 * where they act (`effectiveDynamicConfig`), with a warning.
 */
export function validateDynamicConfigKeys(doc: unknown): string[] {
  if (!isMapping(doc)) return [`configuration: must be a mapping (JSON object), got ${describeValue(doc)}`];
  const problems = checkKeys(doc, TOP_LEVEL_RULES, '');
  if (isMapping(doc.postgresql)) {
    const postgresql = doc.postgresql;
    problems.push(
      ...checkKeys(postgresql, POSTGRESQL_RULES, 'postgresql.'),
      ...configurationFilesProblems(postgresql, parameterProblem),
    );
    if (isMapping(postgresql.parameters)) {
      for (const [name, value] of Object.entries(postgresql.parameters)) {
        // null deletes a parameter in a PATCH.
        const problem = value === null ? null : parameterProblem(name, value);
        if (problem)
          problems.push(`postgresql.parameters.${parameterLabel(name)}: ${problem}, got ${describeValue(value)}`);
      }
    }
  }
  return problems;
}

/**
 * effectiveDynamicConfig of `/config` as read, computed again only when the key's revision or the
 * bootstrap section (replaced by a reload) changes: the HA cycle reads `/config` every loop_wait, and
 * a revision names one value. Holds the last result only.
 */
export function effectiveConfigOfRevision(): (
  fromDcs: { value: DynamicConfig; modRevision: string } | null,
  bootstrap: DynamicConfig,
) => EffectiveDynamicConfigResult {
  let last: { revision: string | null; bootstrap: DynamicConfig; result: EffectiveDynamicConfigResult } | null = null;
  return (fromDcs, bootstrap) => {
    const revision = fromDcs?.modRevision ?? null;
    if (last === null || last.revision !== revision || last.bootstrap !== bootstrap) {
      last = { revision, bootstrap, result: effectiveDynamicConfig(fromDcs?.value ?? null, bootstrap) };
    }
    return last.result;
  };
}
