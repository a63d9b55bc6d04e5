import { Findings, isAbsent, Mapping, readSection, readString, splitHostPort } from './config-readers';
import { BOOLEAN_RULE, parsePatroniBoolean } from './config-values';
import type { PostgresqlConfig } from './config.types';

/**
 * The `postgresql` keys about how PostgreSQL's programs are run and what happens when a rewind cannot
 * help: `bin_name`, `pg_ctl_timeout`, `proxy_address`, `remove_data_directory_on_*`.
 */

/** The programs Patroni lets `bin_name` rename (and PATRONI_POSTGRESQL_BIN_<program> set). */
export const PG_PROGRAMS = [
  'pg_ctl',
  'initdb',
  'pg_controldata',
  'pg_basebackup',
  'postgres',
  'pg_isready',
  'pg_rewind',
] as const;
export type PgProgram = (typeof PG_PROGRAMS)[number];

/** Patroni's default `pg_ctl_timeout`: how long a start may take before it is reported as failed. */
export const DEFAULT_PG_CTL_TIMEOUT_SECONDS = 60;
const MAX_PG_CTL_TIMEOUT_SECONDS = 86_400;

export const PROGRAM_KEYS = [
  'bin_name',
  'pg_ctl_timeout',
  'proxy_address',
  'remove_data_directory_on_rewind_failure',
  'remove_data_directory_on_diverged_timelines',
];

export type ProgramSettings = Pick<
  PostgresqlConfig,
  | 'bin_name'
  | 'pg_ctl_timeout'
  | 'proxy_address'
  | 'remove_data_directory_on_rewind_failure'
  | 'remove_data_directory_on_diverged_timelines'
>;

export function readProgramSettings(findings: Findings, postgresql: Mapping): ProgramSettings {
  const settings: ProgramSettings = {};
  const binName = readBinName(findings, postgresql);
  if (Object.keys(binName).length > 0) settings.bin_name = binName;
  const timeout = readPgCtlTimeout(findings, postgresql);
  if (timeout !== undefined) settings.pg_ctl_timeout = timeout;
  const proxy = readString(findings, postgresql, 'proxy_address', 'postgresql');
  if (proxy) {
    const address = splitHostPort(proxy);
    if (!address || /[\s,/]/.test(address.host) || address.host === '')
      findings.invalid('postgresql.proxy_address', 'must be host:port', proxy);
    else settings.proxy_address = proxy.trim();
  }
  for (const key of [
    'remove_data_directory_on_rewind_failure',
    'remove_data_directory_on_diverged_timelines',
  ] as const) {
    const value = postgresql[key];
    if (isAbsent(value)) continue;
    const flag = parsePatroniBoolean(value);
    if (flag === undefined) findings.invalid(`postgresql.${key}`, BOOLEAN_RULE, value);
    else settings[key] = flag;
  }
  return settings;
}

/** `bin_name`: program -> a file name in `bin_dir` (or an absolute path), e.g. Debian's `pg_ctlcluster` wrappers. */
function readBinName(findings: Findings, postgresql: Mapping): Partial<Record<PgProgram, string>> {
  const path = 'postgresql.bin_name';
  const section = readSection(findings, postgresql, 'bin_name', 'postgresql');
  const names: Partial<Record<PgProgram, string>> = {};
  for (const key of Object.keys(section)) {
    if (!(PG_PROGRAMS as readonly string[]).includes(key)) {
      findings.unsupported(`${path}.${key}`, `the programs are ${PG_PROGRAMS.join(', ')}`);
      continue;
    }
    const name = readString(findings, section, key, path);
    if (name === undefined || name.trim() === '') continue;
    if (/[\0\n]/.test(name)) findings.invalid(`${path}.${key}`, 'must be a file name or path', name);
    else names[key as PgProgram] = name.trim();
  }
  return names;
}

/** Seconds, as Patroni's `float(pg_ctl_timeout)`; 0 or empty means the default, as Patroni's `or` does. */
function readPgCtlTimeout(findings: Findings, postgresql: Mapping): number | undefined {
  const value = postgresql.pg_ctl_timeout;
  if (isAbsent(value) || value === '') return undefined;
  const seconds =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(value)
        ? Number(value)
        : NaN;
  if (!Number.isFinite(seconds) || seconds < 0 || seconds > MAX_PG_CTL_TIMEOUT_SECONDS) {
    findings.invalid('postgresql.pg_ctl_timeout', `must be seconds from 1 to ${MAX_PG_CTL_TIMEOUT_SECONDS}`, value);
    return undefined;
  }
  return seconds === 0 ? undefined : seconds;
}

/** Where `program` is: `bin_name`'s entry (absolute, or in `bin_dir`), else `bin_dir/<program>`. */
export function programPath(config: Pick<PostgresqlConfig, 'bin_dir' | 'bin_name'>, program: PgProgram): string {
  const name = config.bin_name?.[program] ?? program;
  if (name.startsWith('/')) return name;
  return `${config.bin_dir.replace(/\/+$/, '')}/${name}`;
}

/** Seconds a start, stop or promote of PostgreSQL may take (`pg_ctl_timeout`, default 60). */
export function pgCtlTimeoutMs(config: Pick<PostgresqlConfig, 'pg_ctl_timeout'>): number {
  return Math.round((config.pg_ctl_timeout ?? DEFAULT_PG_CTL_TIMEOUT_SECONDS) * 1000);
}
