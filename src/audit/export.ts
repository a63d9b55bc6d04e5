import { RecordedEvent } from '../events/event';
import { LogCheckpoint } from '../events/log-checkpoint';

/** Instants in epoch ms; either bound may be left open. */
export interface TimeRange {
  from?: number;
  to?: number;
}

/**
 * The events whose `at` lies within `range` (both bounds included), in source order, as JSON
 * lines: the format `stator audit --file` reads back. A cut log's checkpoint comes first, as
 * `{"checkpoint": ...}`, so the export verifies as the store does.
 */
export function exportLines(
  events: RecordedEvent[],
  range: TimeRange = {},
  checkpoint: LogCheckpoint | null = null,
): string {
  const first = checkpoint ? `${JSON.stringify({ checkpoint })}\n` : '';
  return (
    first +
    events
      .filter((event) => withinRange(Date.parse(event.at), range))
      .map((event) => `${JSON.stringify(event)}\n`)
      .join('')
  );
}

/** `at` is compared as an instant: nodes may write different offsets. */
export function withinRange(instant: number, range: TimeRange): boolean {
  return (range.from === undefined || instant >= range.from) && (range.to === undefined || instant <= range.to);
}
