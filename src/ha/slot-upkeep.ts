import { isIgnoredSlot, SlotMatcher } from '../config/slots-config';
import { SlotReading } from '../postgresql/postgres.port';
import { SlotPlan } from './slot-plan';

/** What one cycle does to the slots beyond creating the planned physical ones and dropping the unplanned. */
export interface SlotUpkeep {
  /**
   * Idle physical slots that hold an xmin though nothing should stream from them here: the xmin
   * would never move again and hold back vacuum on the whole cluster. Dropped, and created again
   * without one (as Patroni 4.1).
   */
  resetXmin: string[];
  /** Idle physical slots to move forward, to where their consumer is known to stand. */
  advance: Record<string, number>;
  /**
   * Logical slots that are neither planned (permanent, with the same database and plugin) nor
   * covered by `ignore_slots`; one in use is left for a later cycle.
   */
  dropLogical: string[];
}

/**
 * The slot work of one cycle, from the plan and the slots as read. Nothing is decided from a slot
 * not read: with no reading, only the advances go (PostgreSQL skips a slot already there).
 * `resetXmin` only when the cluster has a leader and this node is it as a primary or follows it
 * (not while a leader still runs as a standby).
 */
export function slotUpkeep(
  plan: SlotPlan,
  ignore: SlotMatcher[],
  reading: SlotReading,
  resetXmin: boolean,
): SlotUpkeep {
  const planned = new Map(plan.physical.map((slot) => [slot.name, slot]));
  const known = new Map((reading.physical ?? []).map((slot) => [slot.name, slot]));
  const reset = resetXmin
    ? (reading.physical ?? [])
        .filter((slot) => !slot.active && slot.xmin === true && planned.get(slot.name)?.expectedActive === false)
        .map((slot) => slot.name)
    : [];
  const advance: Record<string, number> = {};
  for (const slot of plan.physical) {
    if (slot.position === undefined || slot.expectedActive || reset.includes(slot.name)) continue;
    const here = known.get(slot.name);
    if (reading.physical && !here) continue; // created this cycle: advanced from the next
    if (
      here &&
      (here.active ||
        here.xmin ||
        here.restartLsn === null ||
        (here.restartLsn !== undefined && here.restartLsn >= slot.position))
    )
      continue;
    advance[slot.name] = slot.position;
  }
  const logical = new Map(plan.logical.map((slot) => [slot.name, slot]));
  const dropLogical = (reading.logical ?? [])
    .filter((slot) => !slot.active)
    .filter((slot) => {
      const wanted = logical.get(slot.name);
      if (wanted) return wanted.database !== slot.database || wanted.plugin !== slot.plugin;
      return !isIgnoredSlot(ignore, { name: slot.name, type: 'logical', database: slot.database, plugin: slot.plugin });
    })
    .map((slot) => slot.name);
  return { resetXmin: reset, advance, dropLogical };
}
