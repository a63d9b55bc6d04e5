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
