import { createHash } from 'node:crypto';

/** A JSON text with keys in order, so that the same configuration always has the same digest. */
function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  );
}

/** A short digest of a configuration (12 hex digits of its sha256): what the event log keeps of it. */
export function configDigest(config: unknown): string {
  return createHash('sha256').update(stableJson(config)).digest('hex').slice(0, 12);
}

/** The keys whose value differs, dotted down to `depth` levels (`postgresql.parameters`), sorted. */
export function changedKeys(before: unknown, after: unknown, depth = 2, prefix = ''): string[] {
  const isObject = (v: unknown): v is Record<string, unknown> =>
    v !== null && typeof v === 'object' && !Array.isArray(v);
  if (!isObject(before) || !isObject(after)) return stableJson(before) === stableJson(after) ? [] : [prefix || '.'];
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  return keys.flatMap((key) => {
    const path = prefix ? `${prefix}.${key}` : key;
    if (stableJson(before[key]) === stableJson(after[key])) return [];
    return depth > 1 && isObject(before[key]) && isObject(after[key])
      ? changedKeys(before[key], after[key], depth - 1, path)
      : [path];
  });
}
