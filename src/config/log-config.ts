import { LogSettings } from '../common/logger';
import { compileLogFormat, DEFAULT_LOG_FORMAT } from '../common/log-format';
import { LOG_LEVELS, LOG_OPTION_KEYS, readLogOptions } from './log-options-config';
import {
  Findings,
  ignoreUnsupported,
  isAbsent,
  Mapping,
  readOneOf,
  readSection,
  readString,
  readStringList,
} from './config-readers';

/** Patroni's defaults for a log directory: four files of 25 MB. */
const DEFAULT_FILE_NUM = 4;
const DEFAULT_FILE_SIZE = 25_000_000;

/**
 * The `log` section as Patroni reads it: `level`, `type` (plain | json), `format` (Python logging
 * placeholders; for JSON also a list of field names), `dateformat` (strftime), and `dir` with
 * `file_num`, `file_size` and `mode` for a rotated file instead of standard output.
 */
export function readLog(findings: Findings, doc: Mapping): LogSettings {
  const path = 'log';
  const section = readSection(findings, doc, 'log', '');
  ignoreUnsupported(findings, section, path, [
    'level',
    'type',
    'format',
    'dateformat',
    'dir',
    'file_num',
    'file_size',
    'mode',
    ...LOG_OPTION_KEYS,
  ]);
  const log: LogSettings = {
    level: readLevel(findings, section),
    type: readOneOf(findings, section, 'type', path, ['plain', 'json'] as const, 'plain'),
    format: DEFAULT_LOG_FORMAT,
    file_num: readCount(findings, section, 'file_num', DEFAULT_FILE_NUM, 1000),
    file_size: readCount(findings, section, 'file_size', DEFAULT_FILE_SIZE, 2 ** 40),
  };
  const format = Array.isArray(section.format)
    ? readStringList(findings, section, 'format', path)
    : readString(findings, section, 'format', path);
  if (format !== undefined) log.format = format;
  const dateformat = readString(findings, section, 'dateformat', path);
  if (dateformat !== undefined) log.dateformat = dateformat;
  readLogOptions(findings, section, log);
  const compiled = compileLogFormat(log.format, log.type, log.dateformat);
  if ('problem' in compiled) findings.problem('log.format', compiled.problem);

  // Created if missing when the agent starts, as the files in it are.
  const dir = readString(findings, section, 'dir', path);
  if (dir) log.dir = dir;
  if (!isAbsent(section.mode)) {
    const mode = section.mode;
    if (typeof mode === 'number' && Number.isInteger(mode) && mode >= 0 && mode <= 0o777) log.mode = mode;
    else findings.invalid('log.mode', 'must be file permissions such as 0644', mode);
  }
  return log;
}

function readLevel(findings: Findings, section: Mapping): LogSettings['level'] {
  const level = readString(findings, section, 'level', 'log');
  if (level === undefined) return 'info';
  const mapped = Object.hasOwn(LOG_LEVELS, level.trim().toLowerCase())
    ? LOG_LEVELS[level.trim().toLowerCase()]
    : undefined;
  if (!mapped) findings.invalid('log.level', 'must be one of debug, info, warning, error', level);
  return mapped ?? 'info';
}

function readCount(findings: Findings, section: Mapping, key: string, fallback: number, maximum: number): number {
  const value = section[key];
  if (isAbsent(value)) return fallback;
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= maximum) return value;
  findings.invalid(`log.${key}`, `must be an integer from 0 to ${maximum}`, value);
  return fallback;
}
