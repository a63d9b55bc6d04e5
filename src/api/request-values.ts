/**
 * Values read from requests: sizes, durations and timestamps. Every reader refuses text longer than
 * its cap before matching, and matches with expressions whose quantifiers never compete for the same
 * characters, so each costs time linear in a short input whatever a client sends.
 */
import { readIsoTimestamp } from '../common/iso-timestamp';
import {
  MAX_RESTART_TIMEOUT_SECONDS,
  MAX_SCHEDULE_AHEAD_DAYS,
  OperationRefused,
  ScheduledInstant,
} from '../ha/operation-types';

/** Longer than any sensible size or duration ("18446744073709551615", "4097.5 kB", "2.5e3 min"). */
export const MAX_VALUE_TEXT_LENGTH = 64;

const SIZE_UNITS: Readonly<Record<string, number>> = Object.freeze({
  B: 1,
  kB: 1024,
  MB: 1024 ** 2,
  GB: 1024 ** 3,
  TB: 1024 ** 4,
});
/** The unit a value in each unit is rounded to, as the reference's `convert_to_base_unit` does. */
const NEXT_SMALLER_UNIT: Readonly<Record<string, string>> = Object.freeze({ kB: 'B', MB: 'kB', GB: 'MB', TB: 'GB' });

/**
 * The reference's number syntax (`strtol` / `strtod`) after trimming: a `0x` hex integer, or a
 * decimal integer or float with an optional exponent (`1.5`, `.5`, `1e6`), an optional `+`; then an
 * optional unit, with or without a space. A leading 0 is decimal here, not octal (deliberate
 * deviation), and a sign `-` is refused.
 */
const LAG_SYNTAX = /^\+?(?:0x([0-9a-fA-F]+)|((?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?))\s*(B|kB|MB|GB|TB)?$/;

/** Python's `round()`: to the nearest integer, halves to the even one. */
function roundHalfEven(value: number): number {
  const floor = Math.floor(value);
  const fraction = value - floor;
  if (fraction !== 0.5) return fraction < 0.5 ? floor : floor + 1;
  return floor % 2 === 0 ? floor : floor + 1;
}

/**
 * `lag` as bytes (reference-behavior 1.3, lag parsing): a number with an optional unit `B`, `kB`,
 * `MB`, `GB`, `TB` (base 1024, case-sensitive); a value with a unit is first rounded to the next
 * smaller unit, then to bytes, halves to even (`1.5` → 2, `4097.5kB` → 4195840). Null for anything
 * else, including text over MAX_VALUE_TEXT_LENGTH and values beyond 2^53.
 */
export function readLagBytes(text: string): number | null {
  if (text.length > MAX_VALUE_TEXT_LENGTH) return null;
  const match = LAG_SYNTAX.exec(text.trim());
  if (!match) return null;
  const [, hex, decimal, unit] = match;
  let value = hex !== undefined ? Number.parseInt(hex, 16) : Number(decimal);
  if (unit) {
    value *= SIZE_UNITS[unit];
    const smaller = NEXT_SMALLER_UNIT[unit];
    if (smaller) value = roundHalfEven(value / SIZE_UNITS[smaller]) * SIZE_UNITS[smaller];
  }
  const bytes = roundHalfEven(value);
  return Number.isSafeInteger(bytes) ? bytes : null;
}

const TIMEOUT_SYNTAX = /^(\d+(?:\.\d+)?)\s*(us|ms|s|min|h|d)?$/;
const TIMEOUT_UNITS: Readonly<Record<string, number>> = Object.freeze({
  us: 1e-6,
  ms: 1e-3,
  s: 1,
  min: 60,
  h: 3600,
  d: 86400,
});

/**
 * A restart's `timeout` in seconds: a positive number, or a string such as `30`, `2.5 min`, `1h`
 * (units us, ms, s, min, h, d), at most MAX_RESTART_TIMEOUT_SECONDS. Null for anything else.
 */
export function readTimeoutSeconds(value: unknown): number | null {
  let seconds: number;
  if (typeof value === 'number') seconds = value;
  else if (typeof value === 'string' && value.length <= MAX_VALUE_TEXT_LENGTH) {
    const match = TIMEOUT_SYNTAX.exec(value.trim());
    if (!match) return null;
    seconds = Number(match[1]) * TIMEOUT_UNITS[match[2] ?? 's'];
  } else return null;
  return seconds > 0 && seconds <= MAX_RESTART_TIMEOUT_SECONDS ? seconds : null;
}

/**
 * `scheduled_at` / `schedule`: an ISO 8601 time with an offset, that exists in the calendar, in the
 * future and at most MAX_SCHEDULE_AHEAD_DAYS ahead. `what` is `switchover` or `restart`, as in the
 * reference's messages; an impossible date is "unable to parse" (422), as dateutil answers there.
 */
export function readSchedule(text: string, what: 'switchover' | 'restart', now: number): ScheduledInstant {
  const reading = readIsoTimestamp(text);
  if (reading.kind === 'invalid') {
    throw new OperationRefused(
      422,
      'Unable to parse scheduled timestamp. It should be in an unambiguous format, e.g. ISO 8601',
    );
  }
  if (reading.kind === 'no-offset')
    throw new OperationRefused(400, `Timezone information is mandatory for the scheduled ${what}`);
  if (reading.at < now) throw new OperationRefused(422, `Cannot schedule ${what} in the past`);
  if (reading.at > now + MAX_SCHEDULE_AHEAD_DAYS * 86_400_000) {
    throw new OperationRefused(422, `Cannot schedule ${what} more than ${MAX_SCHEDULE_AHEAD_DAYS} days ahead`);
  }
  return { at: reading.at, text: reading.text };
}
