/**
 * Log lines in Patroni's layout (`2024-08-28 19:39:26,352 INFO: message`), so existing log
 * searches and the acceptance harness (level name at column 24) keep working.
 */
export type LogLevel = 'DEBUG' | 'INFO' | 'WARNING' | 'ERROR' | 'CRITICAL';

const ORDER: Record<LogLevel, number> = { DEBUG: 10, INFO: 20, WARNING: 30, ERROR: 40, CRITICAL: 50 };

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warning(message: string): void;
  error(message: string): void;
  critical(message: string): void;
}

function timestamp(date: Date): string {
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())},${pad(date.getMilliseconds(), 3)}`
  );
}

export function createLogger(minimum: LogLevel = 'INFO', write: (line: string) => void = (l) => process.stdout.write(l)): Logger {
  const log = (level: LogLevel) => (message: string) => {
    if (ORDER[level] < ORDER[minimum]) return;
    write(`${timestamp(new Date())} ${level}: ${message}\n`);
  };
  return { debug: log('DEBUG'), info: log('INFO'), warning: log('WARNING'), error: log('ERROR'), critical: log('CRITICAL') };
}

export const silentLogger: Logger = { debug() {}, info() {}, warning() {}, error() {}, critical() {} };
