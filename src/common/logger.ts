import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { compileLogFormat, defaultAsctime, LineRenderer } from './log-format';
import { RotatingLogFile } from './rotating-log-file';

/**
 * Log lines in Patroni's layout (`2024-08-28 19:39:26,352 INFO: message`), so existing log
 * searches and the acceptance harness (level name at column 24) keep working.
 */
export type LogLevel = 'DEBUG' | 'INFO' | 'WARNING' | 'ERROR' | 'CRITICAL';

const ORDER: Record<LogLevel, number> = { DEBUG: 10, INFO: 20, WARNING: 30, ERROR: 40, CRITICAL: 50 };

/** The `log` section: Patroni's keys, as the loader reads them. */
export interface LogSettings {
  level: 'debug' | 'info' | 'warning' | 'error';
  /** `plain` lines, or one JSON object per line. */
  type: 'plain' | 'json';
  /** Python logging placeholders (`%(asctime)s %(levelname)s: %(message)s`), or for JSON the field names. */
  format: string | string[];
  /** strftime for `%(asctime)s`; default `2024-08-28 19:39:26,352`. */
  dateformat?: string;
  /** Write to a rotated file in this directory instead of standard output. */
  dir?: string;
  /** Rotated files kept. */
  file_num: number;
  /** Bytes before rotating. */
  file_size: number;
  /** File permissions. */
  mode?: number;
}

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warning(message: string): void;
  error(message: string): void;
  critical(message: string): void;
}

/** Patroni's default line: `2024-08-28 19:39:26,352 INFO: message`. */
const defaultLine: LineRenderer = (record) => `${defaultAsctime(record.time)} ${record.level}: ${record.message}`;

export function createLogger(
  minimum: LogLevel = 'INFO',
  write: (line: string) => void = (l) => process.stdout.write(l),
  render: LineRenderer = defaultLine,
): Logger {
  const log = (level: LogLevel) => (message: string) => {
    if (ORDER[level] < ORDER[minimum]) return;
    write(`${render({ level, levelNumber: ORDER[level], message, time: new Date() })}\n`);
  };
  return { debug: log('DEBUG'), info: log('INFO'), warning: log('WARNING'), error: log('ERROR'), critical: log('CRITICAL') };
}

/**
 * The agent's logger as the `log` section asks: level, format (plain or JSON) and, with `dir`, a
 * rotated file instead of standard output, as Patroni does.
 */
export function createConfiguredLogger(log: LogSettings, fileName: string): Logger {
  const render = compileLogFormat(log.format, log.type, log.dateformat);
  if ('problem' in render) throw new Error(`log.format: ${render.problem}`); // the loader has checked it
  const level = log.level === 'warning' ? 'WARNING' : (log.level.toUpperCase() as LogLevel);
  if (!log.dir) return createLogger(level, undefined, render);
  mkdirSync(log.dir, { recursive: true });
  const file = new RotatingLogFile(join(log.dir, fileName), log.file_size, log.file_num, log.mode);
  return createLogger(level, (line) => file.write(line), render);
}

export const silentLogger: Logger = { debug() {}, info() {}, warning() {}, error() {}, critical() {} };
