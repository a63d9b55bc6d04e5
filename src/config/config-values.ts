/** Readers of raw configuration values, shared by the file loader, the environment, `/config` and statorctl. */

export const BOOLEAN_RULE = 'must be a boolean (true/false, on/off, yes/no)';

/**
 * Patroni's `parse_bool`: real booleans, and case-insensitive on/off, true/false, yes/no, 1/0 (also as numbers).
 * Undefined when the value is none of these.
 */
export function parsePatroniBoolean(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const text = String(value).trim().toLowerCase();
  if (['on', 'true', 'yes', '1'].includes(text)) return true;
  if (['off', 'false', 'no', '0'].includes(text)) return false;
  return undefined;
}

/** A YAML or JSON mapping (not a list, not a date). */
export function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

/** A value as it would appear in JSON, shortened, for "got ..." in messages. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

/** Rule texts shared with load-config.ts, so both speak of booleans and parameters in the same words. */
export const PARAMETER_RULE = 'must be a string, number or boolean';

/** Patroni's `int(value)` for DCS documents: integers, and strings holding one. */
const SECONDS_PER_UNIT: Readonly<Record<string, number>> = Object.freeze({
  ms: 0.001,
  s: 1,
  min: 60,
  h: 3600,
  d: 86_400,
});

/** Seconds as the reference reads them: an integer, or a number with PostgreSQL's time units (`30min`, `1h`). */
export function toSeconds(value: unknown): number | undefined {
  const plain = toInteger(value);
  if (plain !== undefined) return plain;
  if (typeof value !== 'string' || value.length > 32) return undefined;
  const match = /^\s*(\d+)\s*(ms|s|min|h|d)\s*$/.exec(value);
  return match ? Math.floor(Number(match[1]) * SECONDS_PER_UNIT[match[2]]) : undefined;
}

export function toInteger(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string' && /^\s*[-+]?\d+\s*$/.test(value)) return Number.parseInt(value, 10);
  return undefined;
}

/** A server parameter's name as PostgreSQL spells them (`work_mem`, `auto_explain.log_min_duration`). */
const PARAMETER_NAME = /^[A-Za-z_][A-Za-z0-9_.$]{0,62}$/;
/** Longer than any real setting; a value is written into postgresql.conf, where it must stay on one line. */
export const MAX_PARAMETER_VALUE_LENGTH = 4096;

/** A parameter's name for a message: as it is when valid, else quoted and shortened. */
export function parameterLabel(name: string): string {
  return PARAMETER_NAME.test(name) ? name : describeValue(name);
}

/** Why a server parameter cannot be written into postgresql.conf, or null when it can. */
export function parameterProblem(name: string, value: unknown): string | null {
  if (!PARAMETER_NAME.test(name))
    return 'must be named as PostgreSQL names parameters (letters, digits, _ . $; at most 63)';
  if (!isParameterValue(value)) return PARAMETER_RULE;
  if (typeof value === 'number' && !Number.isFinite(value)) return 'must be a finite number';
  if (typeof value === 'string') {
    if (value.length > MAX_PARAMETER_VALUE_LENGTH) return `must be at most ${MAX_PARAMETER_VALUE_LENGTH} characters`;
    // eslint-disable-next-line no-control-regex -- control characters are what this check refuses
    if (/[\u0000-\u001f\u007f]/.test(value))
      return 'must not contain control characters (a line break would end the setting)';
  }
  return null;
}

export function isParameterValue(value: unknown): value is string | number | boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}
