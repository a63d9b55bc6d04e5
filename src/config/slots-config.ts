/** A permanent replication slot from the dynamic configuration's `slots`, kept by the leader and its replicas. */
export interface PermanentSlot {
  name: string;
  type: 'physical' | 'logical';
  database?: string;
  plugin?: string;
  /** A physical slot kept only in a primary cluster, or only in a standby cluster (`cluster_type`); both when absent. */
  cluster_type?: ClusterType;
}

export type ClusterType = 'primary' | 'standby';
const CLUSTER_TYPES: readonly unknown[] = ['primary', 'standby'];

/**
 * Patroni's short form: a slot given as `0`, `null`, `false` or `""` (`slots: {name: 0}`) is a physical
 * slot with no attributes. Any other value that is not a mapping is refused.
 */
function slotSpec(spec: unknown): Record<string, unknown> | null {
  if (isMapping(spec)) return spec;
  return spec === null || spec === 0 || spec === false || spec === '' ? {} : null;
}

/** One `ignore_slots` entry: a slot that matches every given field is never created nor dropped by Stator. */
export interface SlotMatcher {
  name?: string;
  type?: string;
  database?: string;
  plugin?: string;
}

/** PostgreSQL's rule for slot names. */
const SLOT_NAME = /^[a-z0-9_]{1,63}$/;
/** Every list is bounded: no configuration needs more. */
const MAX_SLOTS = 256;
const MATCHER_FIELDS = ['name', 'type', 'database', 'plugin'] as const;

const isMapping = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A database or output plugin name: an identifier PostgreSQL accepts, without quotes. */
const IDENTIFIER = /^[A-Za-z0-9_.$-]{1,63}$/;

/**
 * What is wrong with a `slots` value, one line per problem naming the slot and the rule: names as
 * PostgreSQL allows them, `type` physical or logical (the default, as the reference, is physical),
 * a logical slot with its `database` and `plugin`.
 */
export function slotsProblems(value: unknown): string[] {
  if (value === null || value === undefined) return [];
  if (!isMapping(value)) return ['slots: must be a mapping of slot names'];
  const entries = Object.entries(value);
  if (entries.length > MAX_SLOTS) return [`slots: at most ${MAX_SLOTS} slots`];
  const problems: string[] = [];
  for (const [name, spec] of entries) {
    const slot = slotSpec(spec);
    if (!SLOT_NAME.test(name))
      problems.push(`slots.${name.slice(0, 80)}: a slot name is 1 to 63 lowercase letters, digits or underscores`);
    else if (slot === null)
      problems.push(`slots.${name}: must be a mapping (type: physical), or 0 for a physical slot`);
    else if (slot.type !== undefined && slot.type !== 'physical' && slot.type !== 'logical')
      problems.push(`slots.${name}.type: must be physical or logical`);
    else if (
      slot.cluster_type !== undefined &&
      slot.cluster_type !== null &&
      !CLUSTER_TYPES.includes(slot.cluster_type)
    ) {
      problems.push(`slots.${name}.cluster_type: must be primary or standby (the kind of cluster the slot is kept in)`);
    } else if (slot.type === 'logical') {
      for (const field of ['database', 'plugin'] as const) {
        if (typeof slot[field] !== 'string' || !IDENTIFIER.test(slot[field] as string))
          problems.push(
            `slots.${name}.${field}: a logical slot needs its ${field}, a name of 1 to 63 letters, digits or _.$-`,
          );
      }
    }
  }
  return problems;
}

/**
 * The usable permanent slots of a stored `slots` value; the rest is said in `adjustments` and skipped.
 * As Patroni 4.1, a physical slot with a `cluster_type` other than this cluster's (`standbyCluster`:
 * whether `standby_cluster` is set) is not kept (and so dropped if it exists); a logical slot's
 * `cluster_type` means nothing (Patroni ignores it too).
 */
export function readPermanentSlots(value: unknown, adjustments: string[], standbyCluster = false): PermanentSlot[] {
  if (!isMapping(value)) return [];
  const slots: PermanentSlot[] = [];
  for (const [name, spec] of Object.entries(value).slice(0, MAX_SLOTS)) {
    const slot = slotSpec(spec);
    const type = slot?.type === 'logical' ? 'logical' : 'physical';
    if (!SLOT_NAME.test(name) || slot === null) {
      adjustments.push(`permanent slot ${JSON.stringify(name.slice(0, 80))} skipped: not a valid slot`);
    } else if (type === 'logical') {
      const { database, plugin } = slot;
      if (
        typeof database === 'string' &&
        IDENTIFIER.test(database) &&
        typeof plugin === 'string' &&
        IDENTIFIER.test(plugin)
      )
        slots.push({ name, type, database, plugin });
      else adjustments.push(`permanent slot ${name} skipped: a logical slot needs its database and plugin`);
    } else if (slot.cluster_type === undefined || slot.cluster_type === null) {
      slots.push({ name, type });
    } else if (!CLUSTER_TYPES.includes(slot.cluster_type)) {
      adjustments.push(`permanent slot ${name} skipped: cluster_type must be primary or standby`);
    } else if (slot.cluster_type === (standbyCluster ? 'standby' : 'primary')) {
      slots.push({ name, type, cluster_type: slot.cluster_type as ClusterType });
    }
  }
  return slots;
}

/** `ignore_slots`: the mappings among its entries, each reduced to its string fields. */
export function readIgnoreSlots(value: unknown): SlotMatcher[] {
  if (!Array.isArray(value)) return [];
  return value
    .slice(0, MAX_SLOTS)
    .filter(isMapping)
    .map((entry) => {
      const matcher: SlotMatcher = {};
      for (const field of MATCHER_FIELDS) if (typeof entry[field] === 'string') matcher[field] = entry[field] as string;
      return matcher;
    })
    .filter((matcher) => Object.keys(matcher).length > 0);
}

/** Whether one of the matchers covers this slot (every field it gives is equal). */
export function isIgnoredSlot(matchers: SlotMatcher[], slot: SlotMatcher): boolean {
  return matchers.some((matcher) =>
    MATCHER_FIELDS.every((field) => matcher[field] === undefined || matcher[field] === slot[field]),
  );
}
