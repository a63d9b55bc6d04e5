import { isMapping } from './dynamic-config';
import { slotsProblems } from './slots-config';
import { standbyClusterProblems } from './standby-cluster-config';

/**
 * What Stator does with each key of a `/config` write (PATCH or PUT body), so that nothing is accepted
 * and then silently ignored:
 * - keys it acts on are accepted;
 * - settings that promise durability or availability it does not provide yet are refused unless they
 *   say "off" (accepting them would let an operator believe writes are synchronous or the primary
 *   survives an etcd outage);
 * - Patroni keys it stores but does not act on yet are accepted with a warning;
 * - any other key is refused as unknown. `null` (a PATCH deletion) is accepted for every key, so junk
 *   written by other tools can be removed.
 */
const ACTED_ON = new Set([
  'ttl',
  'loop_wait',
  'retry_timeout',
  'maximum_lag_on_failover',
  'check_timeline',
  'primary_start_timeout',
  'master_start_timeout',
  'postgres_unresponsive_timeout',
  'pause',
  'postgresql',
  'synchronous_mode',
  'synchronous_mode_strict',
  'synchronous_node_count',
  'maximum_lag_on_syncnode',
  'failsafe_mode',
  'member_slots_ttl',
  'load_balancer_drain_ms',
  'primary_race_backoff',
  'slots',
  'ignore_slots',
  'standby_cluster',
]);

/** Refused unless off, with what is missing. */
const NOT_SUPPORTED_WHEN_ON: Readonly<Record<string, { isOn: (value: unknown) => boolean; missing: string }>> = Object.freeze({});

const STORED_NOT_ACTED_ON = new Set([
  'primary_stop_timeout',
  'master_stop_timeout',
  'max_timelines_history',
]);

const POSTGRESQL_ACTED_ON = new Set(['use_pg_rewind', 'use_slots', 'parameters']);
const POSTGRESQL_STORED_NOT_ACTED_ON = new Set([
  'pg_hba',
  'pg_ident',
  'recovery_conf',
  'use_unix_socket',
  'use_unix_socket_repl',
  'remove_data_directory_on_rewind_failure',
  'remove_data_directory_on_diverged_timelines',
]);

export interface ConfigWriteReview {
  /** Each makes the write a 400. */
  problems: string[];
  /** Accepted keys that change nothing yet: sent back with the answer and logged. */
  warnings: string[];
}

export function reviewConfigWrite(written: Record<string, unknown>): ConfigWriteReview {
  const problems: string[] = [];
  const warnings: string[] = [];
  problems.push(...slotsProblems(written.slots), ...standbyClusterProblems(written.standby_cluster));
  for (const [key, value] of Object.entries(written)) {
    if (value === null || ACTED_ON.has(key)) continue;
    if (Object.hasOwn(NOT_SUPPORTED_WHEN_ON, key)) {
      const { isOn, missing } = NOT_SUPPORTED_WHEN_ON[key];
      if (isOn(value)) problems.push(`${key}: ${missing}; remove it or turn it off`);
    } else if (STORED_NOT_ACTED_ON.has(key)) {
      warnings.push(`${key} is stored but not acted on yet`);
    } else {
      problems.push(`${quoted(key)}: unknown key (Stator acts on ${[...ACTED_ON].join(', ')})`);
    }
  }
  if (isMapping(written.postgresql)) {
    for (const [key, value] of Object.entries(written.postgresql)) {
      if (value === null || POSTGRESQL_ACTED_ON.has(key)) continue;
      if (POSTGRESQL_STORED_NOT_ACTED_ON.has(key)) warnings.push(`postgresql.${key} is stored but not acted on yet (the local file's value is used)`);
      else problems.push(`postgresql.${quoted(key)}: unknown key (Stator acts on ${[...POSTGRESQL_ACTED_ON].join(', ')})`);
    }
  }
  return { problems, warnings };
}

/** A key as given, shortened and with control characters escaped, so a message can always be printed. */
function quoted(key: string): string {
  const shown = JSON.stringify(key.length > 40 ? `${key.slice(0, 37)}...` : key);
  return shown.slice(1, -1);
}
