import { LogSettings } from '../common/logger';
import { BOOLEAN_RULE, isMapping, parsePatroniBoolean } from './config-values';
import { Findings, isAbsent, Mapping, readIntegerInRange } from './config-readers';

/** The `log` keys beyond level, layout and files. */
export const LOG_OPTION_KEYS = [
  'static_fields',
  'traceback_level',
  'deduplicate_heartbeat_logs',
  'loggers',
  'max_queue_size',
] as const;

/** Python's level names, as `log.level` reads them. */
export const LOG_LEVELS: Readonly<Record<string, LogSettings['level']>> = Object.freeze({
  debug: 'debug',
  info: 'info',
  warning: 'warning',
  warn: 'warning',
  error: 'error',
  critical: 'error',
});
const LEVEL_RULE = 'must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL';

/** Patroni's own loggers. */
const PATRONI_LOGGER = /^patroni(\.|$)/;

/** Reads LOG_OPTION_KEYS from the `log` section into `log`. */
export function readLogOptions(findings: Findings, section: Mapping, log: LogSettings): void {
  if (!isAbsent(section.static_fields)) {
    const fields = readStaticFields(findings, section.static_fields);
    if (fields) log.static_fields = fields;
    if (fields && log.type !== 'json')
      findings.warnings.push('log.static_fields has effect only with log.type: json, as in Patroni');
  }
  if (!isAbsent(section.traceback_level)) {
    const level = readLevelName(findings, 'log.traceback_level', section.traceback_level);
    if (level) log.traceback_level = level;
  }
  if (!isAbsent(section.deduplicate_heartbeat_logs)) {
    const flag = parsePatroniBoolean(section.deduplicate_heartbeat_logs);
    if (flag === undefined)
      findings.invalid('log.deduplicate_heartbeat_logs', BOOLEAN_RULE, section.deduplicate_heartbeat_logs);
    else log.deduplicate_heartbeat_logs = flag;
  }
  if (!isAbsent(section.loggers)) {
    const loggers = readLoggers(findings, section.loggers);
    if (Object.keys(loggers).length > 0) log.loggers = loggers;
  }
  const queueSize = readIntegerInRange(findings, section, 'max_queue_size', 'log', 1, MAX_QUEUE_SIZE);
  if (queueSize !== undefined) log.max_queue_size = queueSize;
}

/** A million waiting lines is some hundred megabytes: beyond that the bound no longer protects the agent's memory. */
const MAX_QUEUE_SIZE = 1_000_000;

/** Scalars only: a JSON line's extra fields are fixed values (`app: patroni`, `cluster: main`). */
function readStaticFields(
  findings: Findings,
  value: unknown,
): Record<string, string | number | boolean | null> | undefined {
  if (!isMapping(value)) {
    findings.invalid('log.static_fields', 'must be a mapping of field names to values', value);
    return undefined;
  }
  const fields: Record<string, string | number | boolean | null> = {};
  for (const [name, field] of Object.entries(value)) {
    if (name === '__proto__') findings.problem('log.static_fields', 'the field name "__proto__" is not allowed');
    else if (field === null || ['string', 'number', 'boolean'].includes(typeof field))
      fields[name] = field as string | number | boolean | null;
    else findings.invalid(`log.static_fields.${name}`, 'must be a string, number, boolean or null', field);
  }
  return fields;
}

function readLevelName(findings: Findings, path: string, value: unknown): LogSettings['level'] | undefined {
  const name = typeof value === 'string' ? value.trim().toLowerCase() : '';
  if (Object.hasOwn(LOG_LEVELS, name)) return LOG_LEVELS[name];
  findings.invalid(path, LEVEL_RULE, value);
  return undefined;
}

/**
 * `log.loggers`: levels per Python logger. Every name of Patroni's (`patroni`, `patroni.ha`, `patroni.postgresql.slots`,
 * an unknown `patroni.*`) is kept: the logger applies it to the nearest Stator log source (logger-sources.ts). Names
 * (`urllib3`, `botocore`...) of the libraries Patroni runs on have nothing under them here: checked, then dropped.
 */
function readLoggers(findings: Findings, value: unknown): Record<string, LogSettings['level']> {
  if (!isMapping(value)) {
    findings.invalid('log.loggers', 'must be a mapping of logger names to levels', value);
    return {};
  }
  const levels: Record<string, LogSettings['level']> = {};
  for (const [name, level] of Object.entries(value)) {
    const parsed = readLevelName(findings, `log.loggers.${name}`, level);
    if (parsed !== undefined && PATRONI_LOGGER.test(name)) levels[name] = parsed;
  }
  return levels;
}
