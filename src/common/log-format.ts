/**
 * Log lines as Patroni's `log.format` and `log.dateformat` describe them, with Python logging's
 * placeholders (`%(asctime)s %(levelname)s: %(message)s`) and strftime directives, and its JSON
 * output (`log.type: json`): one object per line with the fields the format names.
 */

export interface LogRecord {
  level: string;
  levelNumber: number;
  message: string;
  time: Date;
}

const STARTED_AT = Date.now();

/** The placeholders Stator fills, as Python's LogRecord attributes. */
const FIELDS: Readonly<Record<string, (record: LogRecord, asctime: string) => string | number>> = Object.freeze({
  asctime: (_record, asctime) => asctime,
  levelname: (record) => record.level,
  levelno: (record) => record.levelNumber,
  message: (record) => record.message,
  name: () => 'stator',
  process: () => process.pid,
  created: (record) => record.time.getTime() / 1000,
  msecs: (record) => record.time.getMilliseconds(),
  relativeCreated: (record) => record.time.getTime() - STARTED_AT,
  // Python's call-site fields describe Patroni's source; Stator fills them with stable values so
  // that a Patroni format (Patroni's own acceptance harness uses them) keeps its columns.
  pathname: () => 'stator',
  filename: () => 'stator',
  module: () => 'stator',
  funcName: () => 'stator',
  lineno: () => 0,
  thread: () => 0,
  threadName: () => 'MainThread',
  processName: () => 'MainProcess',
});

export const DEFAULT_LOG_FORMAT = '%(asctime)s %(levelname)s: %(message)s';

/** `%(name)` then Python's optional flags, width and precision, then the conversion; or `%%`. Bounded: linear. */
const PLACEHOLDER = /%\((\w{1,32})\)([-+ 0#]{0,4})(\d{0,3})(?:\.(\d{1,3}))?([sdfr])|%%/g;

export type LineRenderer = (record: LogRecord) => string;

/** A renderer for `format`, or the problem with it (an unknown placeholder). */
export function compileLogFormat(
  format: string | string[],
  type: 'plain' | 'json',
  dateformat?: string,
  staticFields: Readonly<Record<string, unknown>> = {},
): LineRenderer | { problem: string } {
  const fields = Array.isArray(format)
    ? format
    : [...format.matchAll(PLACEHOLDER)].filter((m) => m[1]).map((m) => m[1]);
  const unknown = fields.filter((field) => !Object.hasOwn(FIELDS, field));
  if (unknown.length > 0)
    return { problem: `unknown field ${unknown.join(', ')} (known: ${Object.keys(FIELDS).join(', ')})` };
  const directive = dateformat === undefined ? null : unknownDirective(dateformat);
  if (directive) return { problem: `dateformat: ${directive} is not supported` };
  const asctimeOf = (time: Date) => (dateformat === undefined ? defaultAsctime(time) : strftime(dateformat, time));

  if (type === 'json') {
    return (record) => {
      const asctime = asctimeOf(record.time);
      // Static fields after the format's, and over a same-named one, as python-json-logger merges them.
      return JSON.stringify({
        ...Object.fromEntries(fields.map((field) => [field, FIELDS[field](record, asctime)])),
        ...staticFields,
      });
    };
  }
  const text = Array.isArray(format) ? format.map((field) => `%(${field})s`).join(' ') : format;
  return (record) => {
    const asctime = asctimeOf(record.time);
    return text.replace(
      PLACEHOLDER,
      (
        match,
        field: string | undefined,
        flags: string,
        width: string,
        precision: string | undefined,
        conversion: string,
      ) => {
        if (!field) return '%';
        return pad(convert(FIELDS[field](record, asctime), conversion, precision), flags, width);
      },
    );
  };
}

function convert(value: string | number, conversion: string, precision: string | undefined): string {
  if (conversion === 'd') return String(Math.trunc(Number(value)));
  if (conversion === 'f') return Number(value).toFixed(precision === undefined ? 6 : Number(precision));
  const text = String(value);
  return precision === undefined ? text : text.slice(0, Number(precision));
}

function pad(text: string, flags: string, width: string): string {
  const size = Number(width || 0);
  return flags.includes('-') ? text.padEnd(size) : text.padStart(size);
}

const two = (n: number) => String(n).padStart(2, '0');

/** Python logging's default: `2024-08-28 19:39:26,352`, local time. */
export function defaultAsctime(time: Date): string {
  return `${time.getFullYear()}-${two(time.getMonth() + 1)}-${two(time.getDate())} ${two(time.getHours())}:${two(time.getMinutes())}:${two(time.getSeconds())},${String(time.getMilliseconds()).padStart(3, '0')}`;
}

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

const DIRECTIVES: Readonly<Record<string, (time: Date) => string>> = Object.freeze({
  Y: (t) => String(t.getFullYear()),
  y: (t) => two(t.getFullYear() % 100),
  m: (t) => two(t.getMonth() + 1),
  d: (t) => two(t.getDate()),
  H: (t) => two(t.getHours()),
  I: (t) => two(t.getHours() % 12 || 12),
  p: (t) => (t.getHours() < 12 ? 'AM' : 'PM'),
  M: (t) => two(t.getMinutes()),
  S: (t) => two(t.getSeconds()),
  f: (t) => String(t.getMilliseconds() * 1000).padStart(6, '0'),
  j: (t) =>
    String(Math.floor((t.getTime() - new Date(t.getFullYear(), 0, 1).getTime()) / 86_400_000) + 1).padStart(3, '0'),
  b: (t) => MONTHS[t.getMonth()].slice(0, 3),
  B: (t) => MONTHS[t.getMonth()],
  a: (t) => DAYS[t.getDay()].slice(0, 3),
  A: (t) => DAYS[t.getDay()],
  z: (t) => {
    const offset = -t.getTimezoneOffset();
    return `${offset < 0 ? '-' : '+'}${two(Math.floor(Math.abs(offset) / 60))}${two(Math.abs(offset) % 60)}`;
  },
  '%': () => '%',
});

/** The first strftime directive Stator cannot render, or null. */
function unknownDirective(format: string): string | null {
  for (const match of format.matchAll(/%(.?)/g)) if (!Object.hasOwn(DIRECTIVES, match[1])) return `%${match[1]}`;
  return null;
}

export function strftime(format: string, time: Date): string {
  return format.replace(/%(.)/g, (_match, directive: string) => DIRECTIVES[directive](time));
}
