import { NodeTags } from '../config/config.types';

const BUILT_IN_TAGS = ['clonefrom', 'nofailover', 'noloadbalance', 'nosync', 'nostream'];

/**
 * The tags a node publishes (reference-behavior 1.2): built-in tags are dropped when false, except
 * `nofailover` next to `failover_priority` and `nosync` next to `sync_priority`; custom tags stay.
 */
export function effectiveTags(tags: NodeTags): Record<string, unknown> {
  const published: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(tags)) {
    if (value === undefined || value === null) continue;
    const keptBecauseOfPriority =
      (key === 'nofailover' && tags.failover_priority !== undefined) ||
      (key === 'nosync' && tags.sync_priority !== undefined);
    if (BUILT_IN_TAGS.includes(key) && !value && !keptBecauseOfPriority) continue;
    published[key] = value;
  }
  return published;
}

/**
 * The reference's warning for `nofailover` / `nosync` contradicting `failover_priority` /
 * `sync_priority` (the boolean tag wins), worded as it logs them, Python's spelling of values included.
 */
export function tagConflicts(tags: NodeTags): string[] {
  const conflicts: string[] = [];
  for (const [flagName, priorityName] of [
    ['nofailover', 'failover_priority'],
    ['nosync', 'sync_priority'],
  ] as const) {
    if (!(flagName in tags)) continue;
    const flag = tags[flagName];
    const priority = pythonInt(tags[priorityName]);
    if (priority === null) continue;
    if ((pythonTruthy(flag) && priority > 0) || (!pythonTruthy(flag) && priority <= 0)) {
      const shown = pythonStr(flag);
      conflicts.push(
        `Conflicting configuration between ${flagName}: ${shown} and ${priorityName}: ${priority}. Defaulting to ${flagName}: ${shown}`,
      );
    }
  }
  return conflicts;
}

function pythonTruthy(value: unknown): boolean {
  return value !== null && value !== undefined && value !== false && value !== 0 && value !== '';
}

function pythonStr(value: unknown): string {
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (value === null || value === undefined) return 'None';
  return String(value);
}

function pythonInt(value: unknown): number | null {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string' && /^\s*[-+]?\d+\s*$/.test(value)) return Number(value);
  return null;
}
