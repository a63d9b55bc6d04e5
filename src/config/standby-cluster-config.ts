/**
 * `standby_cluster` in the dynamic configuration: the whole cluster replicates from a remote primary
 * (another cluster, usually in another data centre). Its leader is a `standby_leader` that streams
 * from `host`:`port` (or restores with `restore_command`); the other members follow it.
 */
export interface StandbyCluster {
  host: string | null;
  port: number;
  /** Slot on the remote primary the standby leader streams from (`primary_slot_name`). */
  primary_slot_name: string | null;
  /** Recovery settings the standby leader runs with. */
  restore_command: string | null;
  archive_cleanup_command: string | null;
  recovery_min_apply_delay: string | number | null;
  /** How the standby leader is built from the remote (names of `postgresql` method sections, or basebackup). */
  create_replica_methods: string[] | null;
}

const isMapping = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const KNOWN_KEYS = [
  'host',
  'port',
  'primary_slot_name',
  'create_replica_methods',
  'restore_command',
  'archive_cleanup_command',
  'recovery_min_apply_delay',
];
/** A host name or address: no spaces or quotes, which could not go into primary_conninfo safely. */
const HOST = /^[A-Za-z0-9._:%\-[\]]{1,253}$/;
const SLOT_NAME = /^[a-z0-9_]{1,63}$/;
const MAX_COMMAND = 4096;

/** Reference: a standby cluster is one whose `standby_cluster` has a host, a port or a restore_command. */
export function isStandbyClusterValue(value: unknown): boolean {
  if (!isMapping(value)) return false;
  return Boolean(value.host || value.port || value.restore_command);
}

/** What is wrong with a `standby_cluster` value, one line per problem naming the key and the rule. */
export function standbyClusterProblems(value: unknown): string[] {
  if (value === null || value === undefined) return [];
  if (!isMapping(value)) return ['standby_cluster: must be a mapping'];
  const problems: string[] = [];
  for (const key of Object.keys(value)) {
    if (!KNOWN_KEYS.includes(key))
      problems.push(`standby_cluster.${key.slice(0, 80)}: unknown key (known: ${KNOWN_KEYS.join(', ')})`);
  }
  const { host, port, primary_slot_name, create_replica_methods } = value;
  if (host !== undefined && host !== null && (typeof host !== 'string' || !HOST.test(host)))
    problems.push('standby_cluster.host: must be a host name or address');
  if (port !== undefined && port !== null && !validPort(port))
    problems.push('standby_cluster.port: must be an integer from 1 to 65535');
  if (
    primary_slot_name !== undefined &&
    primary_slot_name !== null &&
    (typeof primary_slot_name !== 'string' || !SLOT_NAME.test(primary_slot_name))
  ) {
    problems.push('standby_cluster.primary_slot_name: a slot name is 1 to 63 lowercase letters, digits or underscores');
  }
  for (const key of ['restore_command', 'archive_cleanup_command'] as const) {
    const command = value[key];
    if (
      command !== undefined &&
      command !== null &&
      (typeof command !== 'string' || command.length > MAX_COMMAND || /[\n\r]/.test(command))
    ) {
      problems.push(`standby_cluster.${key}: must be one line of at most ${MAX_COMMAND} characters`);
    }
  }
  const delay = value.recovery_min_apply_delay;
  if (
    delay !== undefined &&
    delay !== null &&
    !(typeof delay === 'number' && Number.isInteger(delay) && delay >= 0) &&
    !(typeof delay === 'string' && /^\d{1,10}\s?(ms|s|min|h|d)?$/.test(delay))
  ) {
    problems.push('standby_cluster.recovery_min_apply_delay: must be a duration such as 300000, "5min" or "1h"');
  }
  if (
    create_replica_methods !== undefined &&
    create_replica_methods !== null &&
    methodNames(create_replica_methods) === null
  ) {
    problems.push(
      'standby_cluster.create_replica_methods: must be a list of at most 16 method names (basebackup, or a method section of postgresql)',
    );
  }
  if (Object.keys(value).length > 0 && !isStandbyClusterValue(value))
    problems.push('standby_cluster: needs a host (and port) or a restore_command');
  return problems;
}

/** The usable `standby_cluster`, or null when there is none (or it is not usable; `adjustments` says why). */
export function readStandbyCluster(value: unknown, adjustments: string[]): StandbyCluster | null {
  if (!isStandbyClusterValue(value)) return null;
  const problems = standbyClusterProblems(value);
  if (problems.length > 0) {
    adjustments.push(`standby_cluster ignored: ${problems.join('; ')}`);
    return null;
  }
  const v = value as Record<string, unknown>;
  const text = (key: string) => (typeof v[key] === 'string' && v[key] !== '' ? (v[key] as string) : null);
  return {
    host: text('host'),
    port: v.port === undefined || v.port === null ? 5432 : Number(v.port),
    primary_slot_name: text('primary_slot_name'),
    restore_command: text('restore_command'),
    archive_cleanup_command: text('archive_cleanup_command'),
    recovery_min_apply_delay:
      typeof v.recovery_min_apply_delay === 'number' || typeof v.recovery_min_apply_delay === 'string'
        ? v.recovery_min_apply_delay
        : null,
    create_replica_methods: methodNames(v.create_replica_methods),
  };
}

/** The server parameters a standby leader adds for its remote: the recovery settings that are set. */
export function standbyRecoveryParameters(standby: StandbyCluster): Record<string, string | number> {
  const parameters: Record<string, string | number> = {};
  if (standby.restore_command) parameters.restore_command = standby.restore_command;
  if (standby.archive_cleanup_command) parameters.archive_cleanup_command = standby.archive_cleanup_command;
  if (standby.recovery_min_apply_delay !== null) parameters.recovery_min_apply_delay = standby.recovery_min_apply_delay;
  return parameters;
}

/** A list of method names (a single name counts as a list of one), or null. */
function methodNames(value: unknown): string[] | null {
  const names = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(names) || names.length === 0 || names.length > 16) return null;
  return names.every((name) => typeof name === 'string' && /^[A-Za-z0-9_.-]{1,63}$/.test(name))
    ? (names as string[])
    : null;
}

function validPort(port: unknown): boolean {
  const value = typeof port === 'string' && /^\d{1,5}$/.test(port) ? Number(port) : port;
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 65535;
}
