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
      (key === 'nofailover' && tags.failover_priority !== undefined) || (key === 'nosync' && tags.sync_priority !== undefined);
    if (BUILT_IN_TAGS.includes(key) && !value && !keptBecauseOfPriority) continue;
    published[key] = value;
  }
  return published;
}
