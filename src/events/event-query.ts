import { RecordedEvent } from './event';

/** What `GET /events` asks of the log, and what one page of it holds. */

/**
 * Where a page of older events starts: per stream, the seq below which its events are still to
 * come. A stream absent from it has nothing more to give (or did not exist yet when the first page
 * was answered), so a cursor never brings newer events back.
 */
export type EventCursor = Record<string, number>;

export interface EventQuery {
  stream?: string;
  node?: string;
  type?: string;
  /** With `stream`: only events with seq >= fromSeq. */
  fromSeq?: number;
  /** Only events at or after this instant (epoch ms). */
  since?: number;
  limit?: number;
}

/** One page of `GET /events`: the events, oldest first, and where the page of older ones starts (null: none). */
export interface EventPage {
  events: RecordedEvent[];
  next: EventCursor | null;
}

export interface EventPageRequest extends EventQuery {
  limit: number;
  /** Only events older than this cursor (from a previous page's `next`). */
  before?: EventCursor;
  /** The page's JSON stays within this many bytes (its oldest events are left for the next page). */
  maxBytes: number;
}

/** A cached event and the size of its JSON. */
export interface CachedEvent {
  event: RecordedEvent;
  bytes: number;
}

/** The filters of EventQuery other than `limit`. */
export function matchesQuery(event: RecordedEvent, filter: EventQuery): boolean {
  return (
    (filter.stream === undefined || event.stream === filter.stream) &&
    (filter.node === undefined || event.node === filter.node) &&
    (filter.type === undefined || event.type === filter.type) &&
    (filter.fromSeq === undefined || event.seq >= filter.fromSeq) &&
    (filter.since === undefined || Date.parse(event.at) >= filter.since)
  );
}
