import {
  applyDecorators,
  BeforeApplicationShutdown,
  Controller,
  Get,
  HttpException,
  HttpStatus,
  Inject,
  Optional,
  Query,
  Req,
  Res,
} from '@nestjs/common';
import { ApiOperation, ApiQuery, ApiResponse, ApiTags } from './openapi-decorators';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Subscription } from 'rxjs';
import { readIsoTimestamp } from '../common/iso-timestamp';
import { EVENT_LOG } from '../common/tokens';
import { RecordedEvent } from '../events/event';
import { EventLog, EventQuery } from '../events/event-log';
import { decodeCursor, encodeCursor, EventCursor, MAX_CURSOR_CHARS } from '../events/event-page';
import { LogCheckpoint } from '../events/log-checkpoint';
import { EventDto } from './dto/read-documents.dto';
import { errorBody } from './http-exception.filter';
import { ErrorAnswers, JsonArrayAnswer } from './openapi/api-answers';

/** The filters of both endpoints, for the OpenAPI document. */
const FILTERS = [
  ApiQuery({
    name: 'stream',
    required: false,
    type: String,
    description: 'Only this stream (`cluster`, `node/<name>`...).',
  }),
  ApiQuery({ name: 'node', required: false, type: String }),
  ApiQuery({ name: 'type', required: false, type: String, description: 'Only this event type.' }),
  ApiQuery({
    name: 'from_seq',
    required: false,
    type: 'integer',
    description: 'With `stream`: from this sequence number.',
  }),
  ApiQuery({ name: 'since', required: false, type: String, description: 'ISO 8601 time with an offset.' }),
  ApiQuery({ name: 'limit', required: false, type: 'integer', description: '1 to 10000 (default 1000).' }),
];
const BAD_FILTER: [number, string] = [
  400,
  'An unknown, repeated, empty or unreadable parameter (named in the message).',
];
const NO_LOG: [number, string] = [503, 'This API serves no event log.'];

/** Milliseconds between the comment lines that keep an idle event stream (and any proxy on the way) open. */
export const SSE_HEARTBEAT_MS = Symbol('SseHeartbeatMs');
const DEFAULT_HEARTBEAT_MS = 15_000;

const DEFAULT_EVENT_LIMIT = 1000;
const MAX_EVENT_LIMIT = 10_000;
/** One answer of `GET /events` stays within 4 MiB of JSON; its oldest events are left for the next page. */
export const MAX_EVENTS_ANSWER_BYTES = 4 * 1024 * 1024;
/** The longest value of a filter parameter, in characters (stream and node names are far shorter). */
const MAX_VALUE_CHARS = 256;

/** A stream whose client reads slower than events arrive is closed past this much unsent output, rather than buffered without bound. */
const MAX_UNSENT_BYTES = 1024 * 1024;

const PARAMETERS = ['stream', 'node', 'type', 'from_seq', 'since', 'limit', 'before'] as const;
type Parameter = (typeof PARAMETERS)[number];

/**
 * The event log as the node holds it (its recent events in memory; older pages read from etcd):
 * - `GET /events`: the latest `limit` events matching the filters, oldest first, at most 4 MiB of
 *   JSON. When older matching events may exist, `Link: <...&before=CURSOR>; rel="next"` gives the
 *   page before this one (the same filters), until a page comes without it;
 * - `GET /events/checkpoint`: `{checkpoint}`, where retention cut the log (null: never);
 * - `GET /events/stream`: Server-Sent Events, `event: <type>` and `data: <event JSON>` per event.
 *   With `since` or `from_seq`, the matching stored events (at most `limit`) are sent first; then
 *   every new event that matches. A comment line is sent every 15 s while nothing happens.
 * Filters: `stream`, `node`, `type` (exact match), `from_seq` (with `stream`), `since` (ISO time).
 * The live stream replays from the node's cache only.
 */
@ApiTags('events')
@Controller('events')
export class EventsController implements BeforeApplicationShutdown {
  /** How to end each open event stream, so that shutting down does not wait for clients to leave. */
  private readonly openStreams = new Set<() => void>();

  constructor(
    // Absent in API-only compositions (tests with a fixed node view); the node always provides it.
    @Optional() @Inject(EVENT_LOG) private readonly log: EventLog | null,
    @Optional() @Inject(SSE_HEARTBEAT_MS) private readonly heartbeatMs: number = DEFAULT_HEARTBEAT_MS,
  ) {}

  @Get()
  @ApiOperation({ summary: 'Recorded events, oldest first, paged by Link headers' })
  @applyDecorators(
    ...FILTERS,
    ApiQuery({
      name: 'before',
      required: false,
      type: String,
      description: 'The cursor of a `Link: rel="next"` header: the page before.',
    }),
  )
  @JsonArrayAnswer(
    200,
    'The latest matching events, oldest first; `Link: <...>; rel="next"` when older ones may exist.',
    EventDto,
  )
  @ErrorAnswers(BAD_FILTER, NO_LOG)
  async list(
    @Query() query: Record<string, unknown>,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<RecordedEvent[]> {
    const { before, ...filter } = parseEventQuery(query);
    const page = await this.eventLog().page({
      ...filter,
      limit: filter.limit ?? DEFAULT_EVENT_LIMIT,
      before,
      maxBytes: MAX_EVENTS_ANSWER_BYTES,
    });
    if (page.next) void reply.header('link', `<${nextPageUrl(query, page.next)}>; rel="next"`);
    return page.events;
  }

  /** `{checkpoint}`: where retention cut the log (null: never), so that the pages of GET /events can be folded from it (/ui's time travel). */
  @Get('checkpoint')
  @ApiOperation({ summary: 'Where retention cut the event log (null: never cut)' })
  @ApiResponse({
    status: 200,
    description: 'The retention checkpoint: what the cut-off events folded to.',
    schema: {
      type: 'object',
      properties: { checkpoint: { type: 'object', nullable: true } },
      required: ['checkpoint'],
    },
  })
  @ErrorAnswers(NO_LOG)
  async checkpoint(): Promise<{ checkpoint: LogCheckpoint | null }> {
    return { checkpoint: await this.eventLog().storedCheckpoint() };
  }

  @Get('stream')
  @ApiOperation({ summary: 'Events as they are recorded (Server-Sent Events)' })
  @applyDecorators(...FILTERS)
  @ApiResponse({
    status: 200,
    description: 'Server-Sent Events: `event: <type>`, `data: <event JSON>`; a comment every 15 s.',
    content: { 'text/event-stream': { schema: { type: 'string' } } },
  })
  @ErrorAnswers([400, 'A bad filter, or `before` (the stream pages nothing).'], NO_LOG)
  stream(@Req() request: FastifyRequest, @Query() query: Record<string, unknown>, @Res() reply: FastifyReply): void {
    const { before, ...filter } = parseEventQuery(query);
    if (before) throw badParameter('before pages GET /events; the stream sends what happens from now on');
    const log = this.eventLog();
    if (request.method === 'HEAD') {
      void reply.code(HttpStatus.OK).header('content-type', 'text/event-stream; charset=utf-8').send();
      return;
    }
    reply.hijack();
    const response = reply.raw;
    response.writeHead(HttpStatus.OK, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });

    let subscription: Subscription | undefined;
    let heartbeat: NodeJS.Timeout | undefined;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      clearInterval(heartbeat);
      subscription?.unsubscribe();
      this.openStreams.delete(end);
      response.end();
    };
    const send = (text: string) => {
      if (ended) return;
      response.write(text);
      if (response.writableLength > MAX_UNSENT_BYTES) end();
    };
    this.openStreams.add(end);
    response.on('close', end);

    // Replay and subscription happen in one synchronous step, so no event falls between them or comes twice.
    const replay =
      filter.since !== undefined || filter.fromSeq !== undefined
        ? log.query({ ...filter, limit: filter.limit ?? DEFAULT_EVENT_LIMIT })
        : [];
    subscription = log.feed().subscribe({
      next: (event) => {
        if (matchesFilter(event, filter)) send(sseFrame(event));
      },
      complete: end,
    });
    if (ended) return; // the log had already stopped
    heartbeat = setInterval(() => send(': heartbeat\n\n'), this.heartbeatMs);
    heartbeat.unref();

    response.flushHeaders();
    for (const event of replay) send(sseFrame(event));
  }

  beforeApplicationShutdown(): void {
    for (const end of [...this.openStreams]) end();
  }

  private eventLog(): EventLog {
    if (this.log) return this.log;
    throw new HttpException(
      errorBody(HttpStatus.SERVICE_UNAVAILABLE, 'this API serves no event log'),
      HttpStatus.SERVICE_UNAVAILABLE,
    );
  }
}

function matchesFilter(event: RecordedEvent, filter: EventQuery): boolean {
  return (
    (filter.stream === undefined || event.stream === filter.stream) &&
    (filter.node === undefined || event.node === filter.node) &&
    (filter.type === undefined || event.type === filter.type)
  );
}

/** One event as a Server-Sent Events message: its type names the message, its JSON is the data (one line). */
export function sseFrame(event: RecordedEvent): string {
  return `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** The same request with `before` set to the next page's cursor. */
function nextPageUrl(query: Record<string, unknown>, next: EventCursor): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) if (name !== 'before') params.set(name, String(value));
  params.set('before', encodeCursor(next));
  return `/events?${params.toString()}`;
}

/**
 * The query string of `/events` as an EventLog filter and page cursor. Every refusal is a 400
 * naming the parameter: an unknown or repeated parameter, an empty value, a value longer than 256
 * characters (a cursor: 16 KiB), `from_seq` that is not a non-negative integer or comes without
 * `stream` (sequence numbers count within one stream), `since` that is not an ISO 8601 time with
 * an offset, `limit` outside 1..10000, `before` that is not a cursor of a `Link` header. Every
 * check is linear in the (capped) length of the value.
 */
export function parseEventQuery(query: Record<string, unknown>): EventQuery & { before?: EventCursor } {
  const values: Partial<Record<Parameter, string>> = {};
  for (const [name, value] of Object.entries(query ?? {})) {
    if (!(PARAMETERS as readonly string[]).includes(name))
      throw badParameter(`unknown parameter ${name.slice(0, MAX_VALUE_CHARS)}; known: ${PARAMETERS.join(', ')}`);
    if (Array.isArray(value)) throw badParameter(`parameter ${name} is given more than once`);
    if (value === '') throw badParameter(`parameter ${name} is empty`);
    const text = String(value);
    const maxChars = name === 'before' ? MAX_CURSOR_CHARS : MAX_VALUE_CHARS;
    if (text.length > maxChars) throw badParameter(`parameter ${name} is longer than ${maxChars} characters`);
    values[name as Parameter] = text;
  }

  const filter: EventQuery & { before?: EventCursor } = {};
  if (values.stream !== undefined) filter.stream = values.stream;
  if (values.node !== undefined) filter.node = values.node;
  if (values.type !== undefined) filter.type = values.type;
  if (values.from_seq !== undefined) {
    if (!/^\d+$/.test(values.from_seq))
      throw badParameter(`from_seq must be a non-negative integer, got ${values.from_seq}`);
    if (filter.stream === undefined)
      throw badParameter('from_seq needs stream: sequence numbers count within one stream');
    filter.fromSeq = Number(values.from_seq);
  }
  if (values.since !== undefined) {
    // Calendar-valid only: Date.parse would roll 2030-02-30 over into March.
    const since = readIsoTimestamp(values.since);
    if (since.kind !== 'valid') {
      throw badParameter(
        `since must be an ISO 8601 time with an offset that exists in the calendar (e.g. 2024-05-01T12:00:00Z), got ${values.since}`,
      );
    }
    filter.since = since.at;
  }
  if (values.limit !== undefined) {
    const limit = Number(values.limit);
    if (!/^\d+$/.test(values.limit) || limit < 1 || limit > MAX_EVENT_LIMIT) {
      throw badParameter(`limit must be an integer from 1 to ${MAX_EVENT_LIMIT}, got ${values.limit}`);
    }
    filter.limit = limit;
  }
  if (values.before !== undefined) {
    const cursor = decodeCursor(values.before);
    if (typeof cursor === 'string')
      throw badParameter(`before must be the cursor of a Link header of GET /events; this one ${cursor}`);
    filter.before = cursor;
  }
  return filter;
}

function badParameter(message: string): HttpException {
  return new HttpException(errorBody(HttpStatus.BAD_REQUEST, message), HttpStatus.BAD_REQUEST);
}
