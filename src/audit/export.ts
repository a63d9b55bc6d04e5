import { RecordedEvent } from '../events/event';

/** Instants in epoch ms; either bound may be left open. */
export interface TimeRange {
  from?: number;
  to?: number;
}

/**
 * The events whose `at` lies within `range` (both bounds included), in source order, as JSON
 * lines: the format `stator audit --file` reads back.
 */
export function exportLines(events: RecordedEvent[], range: TimeRange = {}): string {
  return events
    .filter((event) => withinRange(Date.parse(event.at), range))
    .map((event) => `${JSON.stringify(event)}\n`)
    .join('');
}

/** `at` is compared as an instant: nodes may write different offsets. */
export function withinRange(instant: number, range: TimeRange): boolean {
  return (range.from === undefined || instant >= range.from) && (range.to === undefined || instant <= range.to);
}
