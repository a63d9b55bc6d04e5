import { isMapping } from './config-values';
import { slotsProblems } from './slots-config';
import { standbyClusterProblems } from './standby-cluster-config';

/**
 * What Stator does with each key of a `/config` write (PATCH or PUT body), so that nothing is accepted
 * and then silently ignored:
 * - keys it acts on are accepted;
 * - keys that are node-local in Stator are refused, saying where they belong;
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
  'synchronous_site_count',
  'maximum_lag_on_syncnode',
  'failsafe_mode',
  'member_slots_ttl',
  'load_balancer_drain_ms',
  'primary_race_backoff',
  'slots',
  'ignore_slots',
  'standby_cluster',
  'primary_stop_timeout',
  'master_stop_timeout',
  'max_timelines_history',
]);

/** `use_unix_socket_repl` changes nothing in Stator, which makes no replication connection to its own server. */
const POSTGRESQL_ACTED_ON = new Set([
  'use_pg_rewind',
  'use_slots',
  'parameters',
  'pg_hba',
  'pg_ident',
  'recovery_conf',
  'use_unix_socket_repl',
  'remove_data_directory_on_rewind_failure',
  'remove_data_directory_on_diverged_timelines',
]);
/** Refused through `/config`, with why and what to use instead. */
const POSTGRESQL_REFUSED: Readonly<Record<string, string>> = Object.freeze({
  use_unix_socket:
    "how this agent connects to its own server is node-local in Stator (Patroni documents it only in the local file): set postgresql.use_unix_socket in each node's configuration file",
});

export interface ConfigWriteReview {
  /** Each makes the write a 400. */
  problems: string[];
}

export function reviewConfigWrite(written: Record<string, unknown>): ConfigWriteReview {
  const problems: string[] = [];
  problems.push(...slotsProblems(written.slots), ...standbyClusterProblems(written.standby_cluster));
  for (const [key, value] of Object.entries(written)) {
    if (value === null || ACTED_ON.has(key)) continue;
    problems.push(`${quoted(key)}: unknown key (Stator acts on ${[...ACTED_ON].join(', ')})`);
  }
  if (isMapping(written.postgresql)) {
    for (const [key, value] of Object.entries(written.postgresql)) {
      if (value === null || POSTGRESQL_ACTED_ON.has(key)) continue;
      if (Object.hasOwn(POSTGRESQL_REFUSED, key)) problems.push(`postgresql.${key}: ${POSTGRESQL_REFUSED[key]}`);
      else
        problems.push(`postgresql.${quoted(key)}: unknown key (Stator acts on ${[...POSTGRESQL_ACTED_ON].join(', ')})`);
    }
  }
  return { problems };
}

/** A key as given, shortened and with control characters escaped, so a message can always be printed. */
function quoted(key: string): string {
  const shown = JSON.stringify(key.length > 40 ? `${key.slice(0, 37)}...` : key);
  return shown.slice(1, -1);
}
