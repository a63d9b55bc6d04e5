/**
 * The checks of an operation body's keys, in plain code (class-validator and its 320 modules are not loaded by the
 * agent: 3 MiB of heap for the five checks used here). A key's checks run in their order and the first refusal is its
 * answer; a key the body does not have is never checked.
 */

/** The refusal's text for a value, or null when the value passes. */
export type ValueCheck = (value: unknown) => string | null;

export interface KeyRule {
  checks: readonly ValueCheck[];
  /** `null` counts as absent (unchecked) instead of being checked and refused. */
  nullIsAbsent?: boolean;
}

/** An operation body's keys in declaration order (the order of "(accepted: ...)"), each with its checks. */
export type BodyRules = Readonly<Record<string, KeyRule>>;

export const isString =
  (message: string): ValueCheck =>
  (value) =>
    typeof value === 'string' ? null : message;
export const isBoolean =
  (message: string): ValueCheck =>
  (value) =>
    typeof value === 'boolean' ? null : message;
/** A string no longer than `max` characters (passes a non-string: pair it with isString). */
export const atMostLength =
  (max: number, message: string): ValueCheck =>
  (value) =>
    typeof value === 'string' && value.length > max ? message : null;
export const matches =
  (pattern: RegExp, message: (value: unknown) => string): ValueCheck =>
  (value) =>
    typeof value === 'string' && pattern.test(value) ? null : message(value);
export const isOneOf =
  (allowed: readonly unknown[], message: string): ValueCheck =>
  (value) =>
    allowed.includes(value) ? null : message;
export const satisfies =
  (accepts: (value: unknown) => boolean, message: string): ValueCheck =>
  (value) =>
    accepts(value) ? null : message;

/** The first refusal for each key of `body` that `rules` declares. */
export function keyProblems(body: Record<string, unknown>, rules: BodyRules): Map<string, string> {
  const problems = new Map<string, string>();
  for (const [key, rule] of Object.entries(rules)) {
    if (!Object.hasOwn(body, key)) continue;
    const value = body[key];
    if (value === undefined || (value === null && rule.nullIsAbsent)) continue;
    for (const check of rule.checks) {
      const problem = check(value);
      if (problem !== null) {
        problems.set(key, problem);
        break;
      }
    }
  }
  return problems;
}
