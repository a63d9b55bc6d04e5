import { isIgnoredSlot, SlotMatcher } from '../config/slots-config';
import { PhysicalSlotState } from './postgres.port';

/**
 * Whether the physical slots as read are already what a synchronisation would leave: every wanted
 * slot exists (its WAL not lost), and no other slot is idle and unprotected by `ignore_slots` (a slot a standby still
 * streams from is left alone anyway). An idle cluster then sends no statement for its slots.
 */
export function physicalSlotsInOrder(wanted: string[], keep: SlotMatcher[], known: PhysicalSlotState[]): boolean {
  // A lost slot is dropped and created again: not in order.
  const existing = new Set(known.filter((slot) => !slot.lost).map((slot) => slot.name));
  if (!wanted.every((name) => existing.has(name))) return false;
  const wantedNames = new Set(wanted);
  return known.every(
    (slot) => slot.active || wantedNames.has(slot.name) || isIgnoredSlot(keep, { name: slot.name, type: 'physical' }),
  );
}
