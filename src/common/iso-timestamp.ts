/**
 * ISO 8601 timestamps as operators write them: `YYYY-MM-DDTHH:MM[:SS[.fraction]]` (a space instead
 * of `T` is accepted), then `Z` or an offset `±HH`, `±HHMM`, `±HH:MM`. Only dates that exist in the
 * calendar are accepted (`2030-02-30` and `24:00` are not rolled over as `Date.parse` would).
 *
 * Linear in its input: every quantifier below is bounded, and longer text is refused before matching.
 */
const TIMESTAMP_SYNTAX =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/** Longer than any timestamp of the syntax above (35 characters at most). */
export const MAX_TIMESTAMP_LENGTH = 40;

export type TimestampReading =
  | { kind: 'valid'; at: number; /** the text as given, with `T` between date and time */ text: string }
  | { kind: 'no-offset' }
  | { kind: 'invalid'; reason: string };

export function readIsoTimestamp(raw: string): TimestampReading {
  if (raw.length > MAX_TIMESTAMP_LENGTH + 8)
    return { kind: 'invalid', reason: `longer than ${MAX_TIMESTAMP_LENGTH} characters` };
  const text = raw.trim();
  const match = TIMESTAMP_SYNTAX.exec(text);
  if (!match) return { kind: 'invalid', reason: 'not YYYY-MM-DDTHH:MM[:SS[.fraction]] with Z or an offset ±HH:MM' };
  const [, year, month, day, hour, minute, second = '0', fraction = '', offset] = match;
  const [y, mo, d, h, mi, s] = [year, month, day, hour, minute, second].map(Number);
  if (mo < 1 || mo > 12) return { kind: 'invalid', reason: `month ${month} does not exist` };
  if (d < 1 || d > daysInMonth(y, mo))
    return { kind: 'invalid', reason: `day ${day} does not exist in ${year}-${month}` };
  if (h > 23 || mi > 59 || s > 59)
    return { kind: 'invalid', reason: `time ${hour}:${minute}:${second.padStart(2, '0')} does not exist` };
  if (offset === undefined) return { kind: 'no-offset' };
  const offsetMinutes = readOffsetMinutes(offset);
  if (offsetMinutes === null) return { kind: 'invalid', reason: `offset ${offset} does not exist` };
  const milliseconds = Number(`0.${fraction || '0'}`) * 1000;
  const at = Date.UTC(y, mo - 1, d, h, mi, s, 0) + Math.floor(milliseconds) - offsetMinutes * 60_000;
  return { kind: 'valid', at, text: text.replace(' ', 'T') };
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** `Z` → 0; `+05:30` → 330; null when hours > 23 or minutes > 59. */
function readOffsetMinutes(offset: string): number | null {
  if (offset.toUpperCase() === 'Z') return 0;
  const sign = offset[0] === '-' ? -1 : 1;
  const digits = offset.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = digits.length > 2 ? Number(digits.slice(2)) : 0;
  if (hours > 23 || minutes > 59) return null;
  return sign * (hours * 60 + minutes);
}
