import { NewEvent } from './event';

/**
 * The size cap of one event: `data` up to 16 KiB of JSON (UTF-8), `cause` up to 1 KiB. Every
 * transition and fact of the agent fits easily; what does not (a whole configuration document,
 * a huge error text) is stored as a bounded summary instead, so the log, each agent's cache and
 * every answer of `GET /events` stay bounded. The event itself is never dropped.
 */
export const MAX_EVENT_DATA_BYTES = 16 * 1024;
export const MAX_EVENT_CAUSE_CHARS = 1024;
/** How many of the top-level keys of oversized data the summary names, and how long each name may be. */
const SUMMARY_KEYS = 20;
const SUMMARY_KEY_CHARS = 64;

/** What is stored in place of data over the cap. */
export interface TruncatedData {
  truncated: true;
  /** Size of the data's JSON in bytes. */
  bytes: number;
  /** The first top-level keys, sorted (for an array: none). */
  keys: string[];
  /** How many top-level keys there were. */
  keyCount: number;
}

/**
 * The event with its data and cause within the cap. Idempotent (a summary is far below the cap),
 * so the recorder and the store can both apply it and compare what they hold.
 */
export function boundEvent<T extends NewEvent>(event: T): T {
  const data = boundEventData(event.data);
  const cause =
    typeof event.cause === 'string' && event.cause.length > MAX_EVENT_CAUSE_CHARS
      ? `${event.cause.slice(0, MAX_EVENT_CAUSE_CHARS - 1)}…`
      : event.cause;
  if (data === event.data && cause === event.cause) return event;
  return { ...event, cause, ...(data === undefined ? {} : { data }) };
}

/** `data` itself when its JSON is within MAX_EVENT_DATA_BYTES, else its summary. */
export function boundEventData(data: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (data === undefined || data === null) return data;
  const json = JSON.stringify(data);
  if (json === undefined) return data;
  // A UTF-8 character takes at most 3 bytes per UTF-16 unit: only measure exactly near the cap.
  if (json.length * 3 <= MAX_EVENT_DATA_BYTES) return data;
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes <= MAX_EVENT_DATA_BYTES) return data;
  const allKeys = Array.isArray(data) ? [] : Object.keys(data).sort();
  const summary: TruncatedData = {
    truncated: true,
    bytes,
    keys: allKeys.slice(0, SUMMARY_KEYS).map((key) => key.slice(0, SUMMARY_KEY_CHARS)),
    keyCount: allKeys.length,
  };
  return summary as unknown as Record<string, unknown>;
}
