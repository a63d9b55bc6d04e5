import { ACTION_KINDS, Bounds } from './model-types';
import { ReplicationMode } from './model';

/**
 * Without fences, agent freezes are left out: a frozen agent whose start of its crashed primary
 * completes after the lease ran out runs a primary without a lease until its next cycle, a gap only
 * the fence closes (docs/chaos-and-safety.md, "Two layers").
 */
const FENCELESS_KINDS: ReadonlySet<(typeof ACTION_KINDS)[number]> = new Set(
  // A hang is taken only by the searches that name it (hung-rule.ts), fenced or not.
  ACTION_KINDS.filter((k) => k !== 'agentFreeze' && k !== 'pgHang'),
);

/** The budgets of a search in `mode`: `syncMode` toggles between it and asynchronous replication. */
export function boundsFor(
  mode: ReplicationMode,
  faults: number,
  operations: number,
  writes: number,
  staleReads = 1,
  fenceless = false,
): Bounds {
  return {
    faults,
    operations,
    writes,
    staleReads,
    modes: mode === 'off' ? ['off', 'on'] : [mode, 'off'],
    ...(fenceless ? { fenceless, kinds: FENCELESS_KINDS } : {}),
  };
}
