/**
 * The dynamic (`bootstrap.dcs`, `/config`) forms of the keys that decide what PostgreSQL's configuration files say:
 * `postgresql.pg_hba`, `pg_ident` and `recovery_conf`. As in Patroni, a node's local file wins where it sets them.
 * Self-contained (the parameter check is passed in) so that dynamic-config.ts can use it without an import cycle.
 */

/** Why a server parameter cannot be written into postgresql.conf, or null when it can. */
export type ParameterCheck = (name: string, value: unknown) => string | null;

export interface DynamicConfigurationFiles {
  /** pg_hba.conf lines from `/config`; empty: none given. */
  pg_hba: string[];
  pg_ident: string[];
  recovery_conf: Record<string, string | number | boolean>;
}

const STRING_LIST_RULE = 'must be a list of strings (one line each)';

/**
 * Recovery settings Stator decides itself, as Patroni does: the upstream (`primary_conninfo`, `primary_slot_name`),
 * `recovery_target_timeline: latest`, and no recovery target (a replica that stops at a target pauses, promotes or
 * shuts down on its own). `standby_mode` no longer exists since PostgreSQL 12 (standby.signal replaced it).
 */
export function decidedByStator(name: string): boolean {
  const lower = name.toLowerCase();
  return (
    lower.startsWith('recovery_target') || ['primary_conninfo', 'primary_slot_name', 'standby_mode'].includes(lower)
  );
}

function isStringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((line) => typeof line === 'string' && !/[\r\n]/.test(line));
}

function isPlainMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Refusals for a `/config` write or `bootstrap.dcs`: each names the key and the rule. */
export function configurationFilesProblems(postgresql: Record<string, unknown>, check: ParameterCheck): string[] {
  const problems: string[] = [];
  for (const key of ['pg_hba', 'pg_ident'] as const) {
    const value = postgresql[key];
    if (value !== undefined && value !== null && !isStringList(value))
      problems.push(`postgresql.${key}: ${STRING_LIST_RULE}, got ${JSON.stringify(value)?.slice(0, 60)}`);
  }
  const recovery = postgresql.recovery_conf;
  if (recovery !== undefined && recovery !== null) {
    if (!isPlainMapping(recovery))
      problems.push(
        'postgresql.recovery_conf: must be a mapping of recovery settings (restore_command, recovery_min_apply_delay...)',
      );
    else {
      for (const [name, value] of Object.entries(recovery)) {
        if (value === null) continue;
        const problem = check(name, value);
        if (problem) problems.push(`postgresql.recovery_conf.${name.slice(0, 63)}: ${problem}`);
        else if (decidedByStator(name))
          problems.push(
            `postgresql.recovery_conf.${name}: Stator decides it for a replica (the upstream, timeline latest, no recovery target); remove it`,
          );
      }
    }
  }
  return problems;
}

/** What a stored configuration says (never throws: anyone may have written it); unusable values are left out and said. */
export function readDynamicConfigurationFiles(
  postgresql: Record<string, unknown>,
  origin: string,
  check: ParameterCheck,
  adjustments: string[],
): DynamicConfigurationFiles {
  const lines = (key: 'pg_hba' | 'pg_ident'): string[] => {
    const value = postgresql[key];
    if (value === undefined || value === null) return [];
    if (isStringList(value)) return value;
    adjustments.push(`postgresql.${key} in ${origin} ignored: ${STRING_LIST_RULE}`);
    return [];
  };
  const recovery_conf: Record<string, string | number | boolean> = {};
  if (isPlainMapping(postgresql.recovery_conf)) {
    for (const [name, value] of Object.entries(postgresql.recovery_conf)) {
      if (value === null) continue;
      const problem = check(name, value) ?? (decidedByStator(name) ? 'Stator decides it for a replica' : null);
      if (problem) adjustments.push(`postgresql.recovery_conf.${name.slice(0, 63)} in ${origin} ignored: ${problem}`);
      else recovery_conf[name] = value as string | number | boolean;
    }
  }
  return { pg_hba: lines('pg_hba'), pg_ident: lines('pg_ident'), recovery_conf };
}
