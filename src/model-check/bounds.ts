import { Bounds } from './actions';
import { ReplicationMode } from './model';

/** The budgets of a search in `mode`: `syncMode` toggles between it and asynchronous replication. */
export function boundsFor(mode: ReplicationMode, faults: number, operations: number, writes: number, staleReads = 1, fenceless = false): Bounds {
  return { faults, operations, writes, staleReads, modes: mode === 'off' ? ['off', 'on'] : [mode, 'off'], ...(fenceless ? { fenceless } : {}) };
}
