import { fstatSync, mkdirSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { compileLogFormat, defaultAsctime, LineRenderer } from './log-format';
import { DEFAULT_MAX_QUEUE_SIZE, LogQueue } from './log-queue';
import { sourceLevels } from './logger-sources';
import { RotatingLogFile } from './rotating-log-file';
import { errorText } from './error-text';

const STDOUT_FD = 1;

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
  /** Fields added to every JSON line (`log.type: json`), after the format's. */
  static_fields?: Record<string, string | number | boolean | null>;
  /** `debug`: an unexpected error's stack trace only at log level debug (else one ERROR line with its message). Default `error`. */
  traceback_level?: 'debug' | 'info' | 'warning' | 'error';
  /** Heartbeat lines (`no action. ...`) identical to the previous one are not written again (at level info). */
  deduplicate_heartbeat_logs?: boolean;
  /** Lines waiting for standard output before new ones are dropped (counted, then announced). Default 1000. */
  max_queue_size?: number;
  /** `log.loggers`: levels of Patroni's loggers (`patroni`, `patroni.ha`...), for the components COMPONENT_LOGGERS maps them to. */
  loggers?: Record<string, 'debug' | 'info' | 'warning' | 'error'>;
}

export { COMPONENT_LOGGERS } from './logger-sources';

/** The level `levels` gives the logger `name`: its own entry, else its nearest ancestor's, else `fallback`. */
export function effectiveLevel<L>(name: string, levels: Readonly<Record<string, L>>, fallback: L): L {
  for (
    let current = name;
    current !== '';
    current = current.includes('.') ? current.slice(0, current.lastIndexOf('.')) : ''
  ) {
    if (Object.hasOwn(levels, current)) return levels[current];
  }
  return fallback;
}

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warning(message: string): void;
  error(message: string): void;
  critical(message: string): void;
  /** An unexpected error: its stack trace where `log.traceback_level` says (see createLogger). */
  exception?(message: string, error: unknown): void;
  /** The same output for one of Patroni's loggers (COMPONENT_LOGGERS), at the level `log.loggers` gives it. */
  component?(name: string): Logger;
}

/** `logger`'s logger for the Patroni logger `name`, or `logger` itself when it has none. */
export function componentLogger(logger: Logger, name: string): Logger {
  return logger.component?.(name) ?? logger;
}

/** How createLogger treats some lines beyond level and layout. */
export interface LoggerOptions {
  tracebackLevel?: LogSettings['traceback_level'];
  deduplicateHeartbeats?: boolean;
  /** Levels per Patroni logger name (`log.loggers`); the `patroni` entry, if any, is this logger's own. */
  loggerLevels?: Readonly<Record<string, LogLevel>>;
}

/** The HA loop's verdict when nothing is to be done (Patroni's heartbeat lines, in and out of pause). */
export function isHeartbeatLine(message: string): boolean {
  return message.startsWith('no action. ') || message.startsWith('PAUSE: no action');
}

/** `logger.exception` where the logger has it, else one ERROR line with the stack. */
export function logException(logger: Logger, message: string, error: unknown): void {
  if (logger.exception) logger.exception(message, error);
  else logger.error(`${message}\n${stackOf(error)}`);
}

function stackOf(error: unknown): string {
  return error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
}

/** Patroni's default line: `2024-08-28 19:39:26,352 INFO: message`. */
const defaultLine: LineRenderer = (record) => `${defaultAsctime(record.time)} ${record.level}: ${record.message}`;

/**
 * With `deduplicateHeartbeats` at level INFO (as Patroni, which deduplicates only there), a heartbeat line identical
 * to the last heartbeat written is dropped; any other line written in between makes the next heartbeat appear again.
 * `exception` writes the stack trace with an ERROR line, or with `tracebackLevel: debug` as a DEBUG line when the
 * level lets it through, else an ERROR line with only the error's message (Patroni's `DETAIL: '...'`).
 */
export function createLogger(
  rootMinimum: LogLevel = 'INFO',
  write: (line: string, level: LogLevel) => void = (l) => process.stdout.write(l),
  render: LineRenderer = defaultLine,
  options: LoggerOptions = {},
): Logger {
  let lastHeartbeat: string | null = null;
  const levels = options.loggerLevels ?? {};
  const loggerFor = (minimum: LogLevel): Logger => {
    const deduplicate = options.deduplicateHeartbeats === true && minimum === 'INFO';
    const emit = (level: LogLevel, message: string) => {
      if (ORDER[level] < ORDER[minimum]) return;
      if (deduplicate) {
        const heartbeat = level === 'INFO' && isHeartbeatLine(message);
        if (heartbeat && message === lastHeartbeat) return;
        lastHeartbeat = heartbeat ? message : null;
      }
      write(`${render({ level, levelNumber: ORDER[level], message, time: new Date() })}\n`, level);
    };
    const log = (level: LogLevel) => (message: string) => emit(level, message);
    const exception = (message: string, error: unknown) => {
      if (options.tracebackLevel !== 'debug') emit('ERROR', `${message}\n${stackOf(error)}`);
      else if (ORDER.DEBUG >= ORDER[minimum]) emit('DEBUG', `${message}\n${stackOf(error)}`);
      else emit('ERROR', `${message}, DETAIL: '${errorText(error)}'`);
    };
    const component = (name: string) => loggerFor(effectiveLevel(name, levels, rootMinimum));
    return {
      debug: log('DEBUG'),
      info: log('INFO'),
      warning: log('WARNING'),
      error: log('ERROR'),
      critical: log('CRITICAL'),
      exception,
      component,
    };
  };
  // Every Stator line is one of Patroni's (`patroni.*`): a `patroni` entry sets the level of all those no other entry covers.
  return loggerFor(effectiveLevel('patroni', levels, rootMinimum));
}

/**
 * The agent's logger as the `log` section asks: level, format (plain or JSON) and, with `dir`, a
 * rotated file instead of standard output, as Patroni does.
 */
export function createConfiguredLogger(log: LogSettings, fileName: string): Logger {
  const render = compileLogFormat(log.format, log.type, log.dateformat, log.static_fields);
  if ('problem' in render) throw new Error(`log.format: ${render.problem}`); // the loader has checked it
  const level = log.level === 'warning' ? 'WARNING' : (log.level.toUpperCase() as LogLevel);
  const written = Object.fromEntries(
    Object.entries(log.loggers ?? {}).map(([name, value]) => [
      name,
      value === 'warning' ? 'WARNING' : (value.toUpperCase() as LogLevel),
    ]),
  );
  const loggerLevels = sourceLevels(written, (value) => ORDER[value]);
  const options: LoggerOptions = {
    tracebackLevel: log.traceback_level,
    deduplicateHeartbeats: log.deduplicate_heartbeat_logs,
    loggerLevels,
  };
  if (!log.dir && isRegularFile(STDOUT_FD)) {
    // Redirected to a file: writes never wait for a reader, so each line is written at once.
    return createLogger(level, (line) => writeSync(STDOUT_FD, line), render, options);
  }
  if (!log.dir) {
    // A pipe to journald or a container runtime, a terminal: written off the event loop, bounded.
    const lostLine = (count: number) =>
      `${render({ level: 'WARNING', levelNumber: ORDER.WARNING, message: `lost ${count} log lines: standard output did not take them in time (log.max_queue_size)`, time: new Date() })}\n`;
    const queue = new LogQueue(STDOUT_FD, log.max_queue_size ?? DEFAULT_MAX_QUEUE_SIZE, lostLine);
    return createLogger(
      level,
      (line, lineLevel) => (lineLevel === 'CRITICAL' ? queue.writeNow(line) : queue.write(line)),
      render,
      options,
    );
  }
  mkdirSync(log.dir, { recursive: true });
  const file = new RotatingLogFile(join(log.dir, fileName), log.file_size, log.file_num, log.mode);
  return createLogger(level, (line) => file.write(line), render, options);
}

function isRegularFile(fd: number): boolean {
  try {
    return fstatSync(fd).isFile();
  } catch {
    return false;
  }
}

export const silentLogger: Logger = { debug() {}, info() {}, warning() {}, error() {}, critical() {} };
