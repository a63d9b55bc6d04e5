import type { ServedProjections } from '../projections/served-projections';

/** The last event retention removed from one stream: the retained chain continues with `prev` = `hash`. */
export interface StreamCheckpoint {
  seq: number;
  hash: string;
  /** When that event happened. */
  at: string;
}

/**
 * Where the stored log starts after retention cut it. Retention removes a prefix of the log in
 * store order (the same cut across streams), so `projections`, folded over every removed event,
 * plus the retained events give exactly the projections of the whole log.
 */
export interface LogCheckpoint {
  /** When the cut was made (ISO 8601). */
  cutAt: string;
  /** Every stream that has lost events, with its last removed event. */
  streams: Record<string, StreamCheckpoint>;
  projections: ServedProjections;
}

/** Another writer changed the checkpoint since it was read: the cut is recomputed later, nothing was removed. */
export class CheckpointConflict extends Error {
  override readonly name = 'CheckpointConflict';
}

/** Events a checkpoint covers (removed, or still waiting for removal) are no longer part of the log. */
export function coveredByCheckpoint(checkpoint: LogCheckpoint | null, stream: string, seq: number): boolean {
  return checkpoint !== null && seq <= (checkpoint.streams[stream]?.seq ?? 0);
}
