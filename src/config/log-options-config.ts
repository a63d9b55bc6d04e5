import { COMPONENT_LOGGERS, LogSettings } from '../common/logger';
import { BOOLEAN_RULE, isMapping, parsePatroniBoolean } from './config-values';
import { Findings, isAbsent, Mapping, readIntegerInRange } from './config-readers';

/** The `log` keys beyond level, layout and files. */
export const LOG_OPTION_KEYS = ['static_fields', 'traceback_level', 'deduplicate_heartbeat_logs', 'loggers', 'max_queue_size'] as const;

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

/** Whether a level for Patroni's logger `name` reaches a Stator component: it is one of COMPONENT_LOGGERS or an ancestor of one. */
function reachesComponent(name: string): boolean {
  return Object.values(COMPONENT_LOGGERS).some((component) => component === name || component.startsWith(`${name}.`));
}

/** Reads LOG_OPTION_KEYS from the `log` section into `log`. */
export function readLogOptions(findings: Findings, section: Mapping, log: LogSettings): void {
  if (!isAbsent(section.static_fields)) {
    const fields = readStaticFields(findings, section.static_fields);
    if (fields) log.static_fields = fields;
    if (fields && log.type !== 'json') findings.warnings.push('log.static_fields has effect only with log.type: json, as in Patroni');
  }
  if (!isAbsent(section.traceback_level)) {
    const level = readLevelName(findings, 'log.traceback_level', section.traceback_level);
    if (level) log.traceback_level = level;
  }
  if (!isAbsent(section.deduplicate_heartbeat_logs)) {
    const flag = parsePatroniBoolean(section.deduplicate_heartbeat_logs);
    if (flag === undefined) findings.invalid('log.deduplicate_heartbeat_logs', BOOLEAN_RULE, section.deduplicate_heartbeat_logs);
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
function readStaticFields(findings: Findings, value: unknown): Record<string, string | number | boolean | null> | undefined {
  if (!isMapping(value)) {
    findings.invalid('log.static_fields', 'must be a mapping of field names to values', value);
    return undefined;
  }
  const fields: Record<string, string | number | boolean | null> = {};
  for (const [name, field] of Object.entries(value)) {
    if (name === '__proto__') findings.problem('log.static_fields', 'the field name "__proto__" is not allowed');
    else if (field === null || ['string', 'number', 'boolean'].includes(typeof field)) fields[name] = field as string | number | boolean | null;
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
 * `log.loggers`: levels per Python logger. Patroni's own names with a Stator component behind them (COMPONENT_LOGGERS,
 * or an ancestor: `patroni`, `patroni.dcs`, `patroni.postgresql`) set that component's level, as Python resolves it;
 * they are returned. Another `patroni.*` name (`patroni.postgresql.slots`, `patroni.watchdog`...) has no separate
 * source in Stator: accepted (Patroni's acceptance harness writes such entries) with a start warning saying which
 * level applies. Names (`urllib3`, `botocore`...) of the libraries Patroni runs on have nothing under them here.
 */
function readLoggers(findings: Findings, value: unknown): Record<string, LogSettings['level']> {
  if (!isMapping(value)) {
    findings.invalid('log.loggers', 'must be a mapping of logger names to levels', value);
    return {};
  }
  const levels: Record<string, LogSettings['level']> = {};
  for (const [name, level] of Object.entries(value)) {
    const path = `log.loggers.${name}`;
    const parsed = readLevelName(findings, path, level);
    if (parsed === undefined || !PATRONI_LOGGER.test(name)) continue;
    if (reachesComponent(name)) levels[name] = parsed;
    else {
      const mapped = Object.values(COMPONENT_LOGGERS).join(', ');
      findings.warnings.push(`${path}: Stator has no separate source for this Patroni logger, so its level changes nothing (the nearest of patroni, ${mapped} applies, else log.level)`);
    }
  }
  return levels;
}
