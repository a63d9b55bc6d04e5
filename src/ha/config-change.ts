import { DynamicConfig } from '../dcs/dcs.port';

/** The data of a `config.changed` event: what a write changed, key by dotted key, never the whole document. */
export interface ConfigChange {
  /** Keys added or given a new value, with the new value (objects are walked into). */
  set: Record<string, unknown>;
  /** Keys the write removed. */
  removed: string[];
}

/** The difference between two configuration documents, or null when they are equal. */
export function configChange(before: DynamicConfig, after: DynamicConfig): ConfigChange | null {
  const change: ConfigChange = { set: {}, removed: [] };
  compare(before as Record<string, unknown>, after as Record<string, unknown>, '', change);
  return Object.keys(change.set).length > 0 || change.removed.length > 0 ? change : null;
}

function compare(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
  prefix: string,
  change: ConfigChange,
): void {
  for (const key of Object.keys(before)) if (!Object.hasOwn(after, key)) change.removed.push(prefix + key);
  for (const [key, value] of Object.entries(after)) {
    const old = Object.hasOwn(before, key) ? before[key] : undefined;
    if (isObject(old) && isObject(value)) compare(old, value, `${prefix}${key}.`, change);
    else if (JSON.stringify(old) !== JSON.stringify(value)) change.set[prefix + key] = value;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
