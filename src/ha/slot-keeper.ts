import { errorText } from '../common/error-text';
import { Logger } from '../common/logger';
import { EffectiveDynamicConfig } from '../config/config.types';
import { PostgresQuery, SlotChanges, SlotReading } from '../postgresql/postgres.port';
import { NodeEvents } from './node-events';
import { SlotPlan } from './slot-plan';
import { slotUpkeep } from './slot-upkeep';

/** Each slot a synchronisation created or dropped, as a fact in the event log. */
export function recordSlotChanges(events: NodeEvents, changes: SlotChanges): void {
  for (const name of changes.dropped) {
    const lost = changes.lost?.includes(name) === true;
    const message = lost
      ? `physical slot ${name} dropped because its wal_status was lost, to be created again`
      : `physical slot ${name} dropped`;
    events.recordCluster('slot.dropped', message, {
      slot: name,
      type: 'physical',
      ...(lost ? { wal_status: 'lost' } : {}),
    });
  }
  for (const name of changes.created)
    events.recordCluster('slot.created', `physical slot ${name} created`, { slot: name, type: 'physical' });
}

/**
 * Brings this node's slots to the plan, on the leader and on a replica alike: resets idle slots
 * stuck with an xmin, creates the planned physical slots and drops the others (not those
 * `ignore_slots` covers, nor one in use), moves idle copies forward, drops unplanned logical slots.
 * Each change is an event; a failed advance or logical drop is a warning and is tried next cycle.
 */
export async function keepSlots(
  deps: { query: PostgresQuery; events: NodeEvents; logger: Logger },
  plan: SlotPlan,
  dynamic: Pick<EffectiveDynamicConfig, 'ignore_slots' | 'pause'>,
  reading: SlotReading,
  resetXmin: boolean,
): Promise<void> {
  const { query, events, logger } = deps;
  const upkeep = slotUpkeep(plan, dynamic.ignore_slots, reading, resetXmin);
  const reset = await query.dropIdleSlots(upkeep.resetXmin, 'physical', true);
  for (const name of reset) {
    events.recordCluster(
      'slot.dropped',
      `physical slot ${name} dropped because it holds an xmin and nothing streams from it, to be created again`,
      { slot: name, type: 'physical', xmin: true },
    );
  }
  const names = plan.physical.map((slot) => slot.name);
  recordSlotChanges(
    events,
    await query.syncPhysicalSlots(names, dynamic.ignore_slots, reset.length > 0 ? undefined : reading.physical),
  );
  if (Object.keys(upkeep.advance).length > 0) {
    await query
      .advanceSlots(upkeep.advance)
      .catch((e) => logger.warning(`advancing replication slots failed: ${errorText(e)}`));
  }
  // As Patroni: nothing is dropped while the cluster is paused.
  if (upkeep.dropLogical.length > 0 && !dynamic.pause) {
    const dropped = await query.dropIdleSlots(upkeep.dropLogical, 'logical').catch((e) => {
      logger.warning(`dropping logical slots ${upkeep.dropLogical.join(', ')} failed: ${errorText(e)}`);
      return [] as string[];
    });
    for (const name of dropped)
      events.recordCluster('slot.dropped', `logical slot ${name} dropped: neither permanent nor in ignore_slots`, {
        slot: name,
        type: 'logical',
      });
  }
  for (const name of plan.conflicts)
    logger.warning(`permanent logical slot ${name} skipped: a member's physical slot has its name`);
}
