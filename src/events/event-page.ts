import { RecordedEvent } from './event';
import type { CachedEvent, EventCursor, EventPage, EventPageRequest } from './event-query';
import { matchesQuery } from './event-query';
import { EventStore, StreamRange } from './event-store.port';

export type { EventCursor };

/** What readPage needs of the log. */
export interface PageSource {
  store: EventStore;
  /** The cached events, oldest first; every event evicted from the cache is older than all of them. */
  cached(): CachedEvent[];
  streams(): string[];
  lastSeq(stream: string): number;
  /** The newest event of the stream no longer cached (seq, and its instant in epoch ms), null when all are. */
  evicted(stream: string): { seq: number; at: number } | null;
}

/** Events read from the store per round, over all streams: bounds the memory one request takes. */
const STORE_EVENTS_PER_ROUND = 2000;
/** Rounds of store reads one request may take to fill its page when filters match few events. */
const MAX_ROUNDS = 10;
/**
 * `since` stops the search in a stream once its events are this much older than `since`: within a
 * stream `at` grows with seq except when its node's clock steps back, by less than this.
 */
const SINCE_CLOCK_SLACK_MS = 5 * 60_000;

/**
 * The latest `limit` matching events older than `before`, oldest first, within `maxBytes` of JSON,
 * and the cursor of the page before it. Events evicted from the cache are read from the store by
 * seq ranges, at most STORE_EVENTS_PER_ROUND per round; a page can hold fewer than `limit` events
 * when the rounds run out, and its `next` then continues where they stopped.
 */
export async function readPage(source: PageSource, request: EventPageRequest): Promise<EventPage> {
  let events: RecordedEvent[] = [];
  let cursor = request.before ?? null;
  let bytesLeft = request.maxBytes;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const older = await pageOnce(
      source,
      { ...request, limit: request.limit - events.length, maxBytes: bytesLeft },
      cursor,
      events.length === 0,
    );
    events = [...older.events, ...events];
    bytesLeft -= older.bytes;
    cursor = older.next;
    if (cursor === null || older.full || events.length >= request.limit) return { events, next: cursor };
  }
  return { events, next: cursor };
}

interface PartialPage {
  events: RecordedEvent[];
  next: EventCursor | null;
  bytes: number;
  /** The limit or the byte bound was reached: the page is complete. */
  full: boolean;
}

async function pageOnce(
  source: PageSource,
  request: EventPageRequest,
  before: EventCursor | null,
  atLeastOne: boolean,
): Promise<PartialPage> {
  const lowest = request.stream !== undefined ? Math.max(1, request.fromSeq ?? 1) : 1;
  // Per stream in scope: events below this seq are wanted.
  const upper = new Map<string, number>();
  for (const stream of request.stream !== undefined ? [request.stream] : source.streams()) {
    if (request.node !== undefined && stream.startsWith('node/') && !stream.startsWith(`node/${request.node}/`))
      continue;
    const bound = before ? before[stream] : source.lastSeq(stream) + 1;
    if (bound !== undefined && bound > lowest) upper.set(stream, bound);
  }
  const inScope = (event: RecordedEvent) => event.seq < (upper.get(event.stream) ?? 0) && event.seq >= lowest;

  const fromCache = source
    .cached()
    .filter((cached) => inScope(cached.event))
    .map((cached) => cached.event);
  const cacheSuffices = fromCache.filter((event) => matchesQuery(event, request)).length >= request.limit;
  // Streams whose store read stopped short of their beginning: they may hold more, older events.
  const cutShort = new Set<string>();
  let fromStore: RecordedEvent[] = [];
  if (!cacheSuffices) {
    const ranges = storeRanges(source, request, upper, lowest);
    fromStore = ranges.length > 0 ? await source.store.readRanges(ranges) : [];
    for (const range of ranges) {
      const oldestRead = fromStore.find((event) => event.stream === range.stream);
      const pastSince =
        request.since !== undefined &&
        oldestRead !== undefined &&
        Date.parse(oldestRead.at) < request.since - SINCE_CLOCK_SLACK_MS;
      // Nothing at `fromSeq` means retention removed what lies below: the stream has no more.
      if (range.fromSeq > lowest && oldestRead?.seq === range.fromSeq && !pastSince) cutShort.add(range.stream);
    }
  }

  const candidates = [...fromStore, ...fromCache];
  // Before its oldest event read, a cut-short stream may have unread events newer than other
  // candidates: only candidates from the latest such event on are known to be complete.
  let horizon = 0;
  for (const stream of cutShort)
    horizon = Math.max(
      horizon,
      candidates.findIndex((event) => event.stream === stream),
    );
  const matching = candidates.slice(horizon).filter((event) => matchesQuery(event, request));
  const { kept, bytes } = newestWithinBytes(matching.slice(-request.limit), request.maxBytes, atLeastOne);
  const full = kept.length < matching.length || kept.length >= request.limit;
  // Candidates from `cut` on are served (or did not match); those before it are left for later.
  const cut =
    kept.length < matching.length
      ? kept.length > 0
        ? candidates.indexOf(kept[0])
        : candidates.indexOf(matching[matching.length - 1]) + 1
      : horizon;

  const next: EventCursor = {};
  for (const [stream, bound] of upper) {
    const served = candidates.slice(cut).find((event) => event.stream === stream);
    const newBound = served ? served.seq : bound;
    const leftInCandidates = candidates.slice(0, cut).some((event) => event.stream === stream);
    const evicted = source.evicted(stream);
    const leftInStore = cacheSuffices && evicted !== null && Math.min(newBound - 1, evicted.seq) >= lowest;
    if (leftInCandidates || cutShort.has(stream) || leftInStore) next[stream] = newBound;
  }
  return { events: kept, next: Object.keys(next).length > 0 ? next : null, bytes, full };
}

/** Per stream, the newest evicted events below its bound, within the round's budget. */
function storeRanges(
  source: PageSource,
  request: EventPageRequest,
  upper: Map<string, number>,
  lowest: number,
): StreamRange[] {
  const wanted: { stream: string; toSeq: number }[] = [];
  for (const [stream, bound] of upper) {
    const evicted = source.evicted(stream);
    if (evicted === null) continue;
    if (request.since !== undefined && evicted.at < request.since - SINCE_CLOCK_SLACK_MS && evicted.seq < bound)
      continue;
    const toSeq = Math.min(bound - 1, evicted.seq);
    if (toSeq >= lowest) wanted.push({ stream, toSeq });
  }
  const perStream = Math.max(
    10,
    Math.min(request.limit, Math.floor(STORE_EVENTS_PER_ROUND / Math.max(1, wanted.length))),
  );
  return wanted.map(({ stream, toSeq }) => ({ stream, fromSeq: Math.max(lowest, toSeq - perStream + 1), toSeq }));
}

/** The newest events whose JSON array fits in `maxBytes` (with `atLeastOne`, the newest even when it alone does not). */
function newestWithinBytes(
  events: RecordedEvent[],
  maxBytes: number,
  atLeastOne: boolean,
): { kept: RecordedEvent[]; bytes: number } {
  let bytes = 2; // []
  let first = events.length;
  while (first > 0) {
    const size = Buffer.byteLength(JSON.stringify(events[first - 1])) + 1; // and its comma
    if (bytes + size > maxBytes && (first < events.length || !atLeastOne)) break;
    bytes += size;
    first--;
  }
  return { kept: events.slice(first), bytes };
}

/** Cursors travel as base64url JSON: opaque to clients, who follow the `Link` header. */
export function encodeCursor(cursor: EventCursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString('base64url');
}

/** The longest cursor accepted, in characters: room for about 200 streams, within Node's 16 KiB of request headers. */
export const MAX_CURSOR_CHARS = 8 * 1024;

/** The cursor, or a sentence saying what is wrong with it. */
export function decodeCursor(text: string): EventCursor | string {
  if (text.length > MAX_CURSOR_CHARS) return `is longer than ${MAX_CURSOR_CHARS} characters`;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const base64url = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 45 || c === 95;
    if (!base64url) return 'is not base64url';
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    return 'does not decode to JSON';
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return 'does not decode to an object';
  const entries = Object.entries(parsed);
  if (entries.length === 0) return 'names no stream';
  for (const [stream, seq] of entries) {
    if (!stream || typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1)
      return `has a bad position for stream ${stream.slice(0, 100)}`;
  }
  return parsed as EventCursor;
}
