import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import { Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Observable } from 'rxjs';
import { ApiModule } from '../../../src/api/api.module';
import { EventsController, SSE_HEARTBEAT_MS, sseFrame } from '../../../src/api/events.controller';
import { HttpExceptionFilter } from '../../../src/api/http-exception.filter';
import { createHttpApp } from '../../../src/api/http-server';
import { ApiIdentity } from '../../../src/api/status-document';
import { EVENT_LOG } from '../../../src/common/tokens';
import { NewEvent, RecordedEvent } from '../../../src/events/event';
import { EventLog, rebuildProjections } from '../../../src/events/event-log';
import { LogCheckpoint } from '../../../src/events/log-checkpoint';
import { MemoryEventStore } from '../../../src/events/memory-event-store';
import { waitFor } from '../../../scripts/lib/wait-for';
import { leaderView, NOW } from './node-view-fixtures';

const IDENTITY: ApiIdentity = { scope: 'demo', version: '0.1.0', productKey: 'stator' };

/** An EventLog that counts the live subscriptions to its feed, to show that closed streams release theirs. */
class CountingEventLog extends EventLog {
  feedSubscribers = 0;

  override feed(): Observable<RecordedEvent> {
    const feed = super.feed();
    return new Observable<RecordedEvent>((subscriber) => {
      this.feedSubscribers++;
      const subscription = feed.subscribe(subscriber);
      return () => {
        this.feedSubscribers--;
        subscription.unsubscribe();
      };
    });
  }
}

function transition(node: string, machine: string, to: string, at: string): NewEvent {
  return { stream: `node/${node}/${machine}`, type: `${machine}.transition`, at, node, from: null, to, cause: 'TEST' };
}

let store: MemoryEventStore;
let log: CountingEventLog;
let app: NestFastifyApplication;
let baseUrl: string;

/** Seeds the store with 5 events over two nodes, one a second from 12:00:00Z. */
async function seed(): Promise<void> {
  await store.append('node/node1/role', [transition('node1', 'role', 'replica', '2026-11-21T12:00:00.000Z')], 'any');
  await store.append('node/node1/role', [transition('node1', 'role', 'primary', '2026-11-21T12:00:01.000Z')], 'any');
  await store.append('node/node2/role', [transition('node2', 'role', 'replica', '2026-11-21T12:00:02.000Z')], 'any');
  await store.append(
    'node/node1/leadership',
    [transition('node1', 'leadership', 'leader', '2026-11-21T12:00:03.000Z')],
    'any',
  );
  await store.append(
    'cluster',
    [
      {
        stream: 'cluster',
        type: 'leader.acquired',
        at: '2026-11-21T12:00:04.000+02:00',
        node: 'node1',
        from: null,
        to: null,
        cause: 'race won',
      },
    ],
    'any',
  );
}

async function startApp(module: Parameters<typeof createHttpApp>[0]): Promise<NestFastifyApplication> {
  const started = await createHttpApp(module);
  await started.listen(0, '127.0.0.1');
  return started;
}

function urlOf(started: NestFastifyApplication): string {
  return `http://127.0.0.1:${(started.getHttpServer().address() as AddressInfo).port}`;
}

beforeEach(async () => {
  store = new MemoryEventStore();
  await seed();
  log = new CountingEventLog(store);
  log.start();
  await log.whenLoaded();
  @Module({
    imports: [
      ApiModule.register({
        identity: IDENTITY,
        source: { view: leaderView },
        clock: { now: () => NOW },
        eventLog: log,
      }),
    ],
  })
  class TestApiModule {}
  app = await startApp({ module: TestApiModule });
  baseUrl = urlOf(app);
});

afterEach(async () => {
  await app.close();
  log.stop();
});

async function getEvents(query: string): Promise<{ status: number; type: string; body: unknown }> {
  const response = await fetch(`${baseUrl}/events${query}`);
  return { status: response.status, type: response.headers.get('content-type') ?? '', body: await response.json() };
}

const summary = (events: unknown) => (events as RecordedEvent[]).map((event) => `${event.stream}#${event.seq}`);

describe('GET /events', () => {
  it('answers every stored event as JSON, in store order', async () => {
    const answer = await getEvents('');

    expect(answer.status).toBe(200);
    expect(answer.type).toMatch(/^application\/json/);
    expect(summary(answer.body)).toEqual([
      'node/node1/role#1',
      'node/node1/role#2',
      'node/node2/role#1',
      'node/node1/leadership#1',
      'cluster#1',
    ]);
    expect((answer.body as RecordedEvent[])[1]).toMatchObject({
      type: 'role.transition',
      node: 'node1',
      to: 'primary',
      at: '2026-11-21T12:00:01.000Z',
    });
  });

  it.each([
    ['?stream=node/node1/role', ['node/node1/role#1', 'node/node1/role#2']],
    ['?node=node2', ['node/node2/role#1']],
    ['?type=leadership.transition', ['node/node1/leadership#1']],
    ['?stream=node/node1/role&from_seq=2', ['node/node1/role#2']],
    ['?since=2026-11-21T12:00:02Z', ['node/node2/role#1', 'node/node1/leadership#1']],
    // The cluster event's 12:00:04+02:00 is 10:00:04Z, before 13:00:02+01:00 (12:00:02Z).
    ['?since=2026-11-21T13:00:02%2B01:00', ['node/node2/role#1', 'node/node1/leadership#1']],
    ['?node=node1&type=role.transition&since=2026-11-21T12:00:00.500Z', ['node/node1/role#2']],
    ['?node=node3', []],
  ])('filters with %s', async (query, expected) => {
    const answer = await getEvents(query);

    expect(answer.status).toBe(200);
    expect(summary(answer.body)).toEqual(expected);
  });

  it('answers the latest `limit` events, oldest first', async () => {
    expect(summary((await getEvents('?limit=2')).body)).toEqual(['node/node1/leadership#1', 'cluster#1']);
    expect(summary((await getEvents('?node=node1&limit=1')).body)).toEqual(['cluster#1']);
    expect((await getEvents('?limit=10000')).status).toBe(200);
  });

  it('answers at most 1000 events without a limit', async () => {
    await store.append(
      'node/node3/postgres',
      Array.from({ length: 1200 }, (_, i) => transition('node3', 'postgres', `s${i}`, '2026-11-21T13:00:00Z')),
      'any',
    );

    const events = (await getEvents('')).body as RecordedEvent[];

    expect(events).toHaveLength(1000);
    expect(events[999]).toMatchObject({ stream: 'node/node3/postgres', seq: 1200 });
  });

  it.each([
    ['?limit=abc', 'limit must be an integer from 1 to 10000, got abc'],
    ['?limit=0', 'limit must be an integer from 1 to 10000, got 0'],
    ['?limit=10001', 'limit must be an integer from 1 to 10000, got 10001'],
    ['?limit=1.5', 'limit must be an integer from 1 to 10000, got 1.5'],
    ['?stream=cluster&from_seq=-1', 'from_seq must be a non-negative integer, got -1'],
    ['?from_seq=2', 'from_seq needs stream: sequence numbers count within one stream'],
    [
      '?since=yesterday',
      'since must be an ISO 8601 time with an offset that exists in the calendar (e.g. 2024-05-01T12:00:00Z), got yesterday',
    ],
    [
      '?since=2026-11-21T12:00:00',
      'since must be an ISO 8601 time with an offset that exists in the calendar (e.g. 2024-05-01T12:00:00Z), got 2026-11-21T12:00:00',
    ],
    [
      '?since=2026-13-45T12:00:00Z',
      'since must be an ISO 8601 time with an offset that exists in the calendar (e.g. 2024-05-01T12:00:00Z), got 2026-13-45T12:00:00Z',
    ],
    [
      '?since=2030-02-30T10:00:00Z',
      'since must be an ISO 8601 time with an offset that exists in the calendar (e.g. 2024-05-01T12:00:00Z), got 2030-02-30T10:00:00Z',
    ],
    ['?nodes=node1', 'unknown parameter nodes; known: stream, node, type, from_seq, since, limit, before'],
    ['?node=node1&node=node2', 'parameter node is given more than once'],
    ['?type=', 'parameter type is empty'],
  ])('refuses %s with 400 naming the parameter', async (query, message) => {
    const answer = await getEvents(query);

    expect(answer.status).toBe(400);
    expect(answer.type).toMatch(/^application\/json/);
    expect(answer.body).toEqual({ error: 'Bad Request', message, statusCode: 400 });
  });

  it('answers 503 from an API composed without an event log', async () => {
    @Module({
      imports: [ApiModule.register({ identity: IDENTITY, source: { view: leaderView }, clock: { now: () => NOW } })],
    })
    class NoLogModule {}
    const bare = await createHttpApp({ module: NoLogModule });
    await bare.init();
    try {
      const answer = await bare.getHttpAdapter().getInstance().inject({ method: 'GET', url: '/events' });
      expect(answer.statusCode).toBe(503);
      expect(answer.json()).toEqual({
        error: 'Service Unavailable',
        message: 'this API serves no event log',
        statusCode: 503,
      });
    } finally {
      await bare.close();
    }
  });
});

describe('GET /events/checkpoint', () => {
  it('answers null until retention cuts the log, then the stored checkpoint the pages fold from', async () => {
    expect(await getEvents('/checkpoint')).toMatchObject({ status: 200, body: { checkpoint: null } });
    const projections = rebuildProjections((await store.read()).slice(0, 2));
    const checkpoint: LogCheckpoint = {
      cutAt: '2026-11-21T13:00:00.000Z',
      streams: { 'node/node1/role': { seq: 2, hash: 'h', at: '2026-11-21T12:00:01.000Z' } },
      projections,
    };
    await store.writeCheckpoint(checkpoint, null);

    const answer = await getEvents('/checkpoint');
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ checkpoint: JSON.parse(JSON.stringify(checkpoint)) });
  });
});

describe('GET /events pages', () => {
  const nextLink = (response: Response) =>
    /^<([^>]*)>; rel="next"$/.exec(response.headers.get('link') ?? '')?.[1] ?? null;

  it('links to the page of older events with the same filters, until the first event', async () => {
    const seen: string[][] = [];
    let url: string | null = '/events?limit=2';
    while (url) {
      const response = await fetch(`${baseUrl}${url}`);
      expect(response.status).toBe(200);
      seen.push(summary(await response.json()));
      url = nextLink(response);
      if (url) expect(url).toMatch(/^\/events\?limit=2&before=[A-Za-z0-9_-]+$/);
    }
    expect(seen).toEqual([
      ['node/node1/leadership#1', 'cluster#1'],
      ['node/node1/role#2', 'node/node2/role#1'],
      ['node/node1/role#1'],
    ]);
  });

  it('answers no link when the page holds the oldest matching event', async () => {
    const response = await fetch(`${baseUrl}/events?node=node1&limit=3`);
    expect(summary(await response.json())).toEqual(['node/node1/role#2', 'node/node1/leadership#1', 'cluster#1']);
    const older = await fetch(`${baseUrl}${nextLink(response)}`);
    expect(nextLink(older)).toBeNull();
    expect(summary(await older.json())).toEqual(['node/node1/role#1']);
  });

  it('keeps one answer within 4 MiB, leaving the older events to the next page', async () => {
    const big = (i: number): NewEvent => ({
      ...transition('node3', 'postgres', `s${i}`, '2026-11-21T13:00:00Z'),
      data: { blob: 'x'.repeat(15_000) },
    });
    for (let i = 0; i < 400; i += 50)
      await store.append(
        'node/node3/postgres',
        Array.from({ length: 50 }, (_, j) => big(i + j)),
        'any',
      );

    const response = await fetch(`${baseUrl}/events`);
    const text = await response.text();
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(4 * 1024 * 1024);
    const events = JSON.parse(text) as RecordedEvent[];
    expect(events.length).toBeGreaterThan(200);
    expect(events[events.length - 1]).toMatchObject({ stream: 'node/node3/postgres', seq: 400 });
    expect(nextLink(response)).not.toBeNull();
  });

  it.each([
    [
      'not base64url JSON',
      '?before=not-a-cursor',
      'before must be the cursor of a Link header of GET /events; this one does not decode to JSON',
    ],
    [
      'a + in a cursor',
      '?before=a%2Bb',
      'before must be the cursor of a Link header of GET /events; this one is not base64url',
    ],
    [
      'seq 0',
      `?before=${Buffer.from('{"cluster":0}').toString('base64url')}`,
      'before must be the cursor of a Link header of GET /events; this one has a bad position for stream cluster',
    ],
    [
      'an array',
      `?before=${Buffer.from('[1]').toString('base64url')}`,
      'before must be the cursor of a Link header of GET /events; this one does not decode to an object',
    ],
    ['a cursor of 8 KiB + 1', `?before=${'A'.repeat(8 * 1024 + 1)}`, 'parameter before is longer than 8192 characters'],
    ['a stream of 257 characters', `?stream=${'s'.repeat(257)}`, 'parameter stream is longer than 256 characters'],
    [
      'a since of 300 digits',
      `?since=2026-11-21T12:00:00.${'1'.repeat(300)}Z`,
      'parameter since is longer than 256 characters',
    ],
  ])('refuses %s with 400 naming the parameter and the rule', async (_label, query, message) => {
    const answer = await getEvents(query);

    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ error: 'Bad Request', message, statusCode: 400 });
  });

  it('refuses a cursor on the live stream', async () => {
    const response = await fetch(
      `${baseUrl}/events/stream?before=${Buffer.from('{"cluster":2}').toString('base64url')}`,
    );
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      message: 'before pages GET /events; the stream sends what happens from now on',
    });
  });
});

/** An open event stream: what it has received so far, as text. */
interface StreamClient {
  response: http.IncomingMessage;
  text(): string;
  waitForText(expected: string): Promise<void>;
  close(): void;
}

function openStream(url: string): Promise<StreamClient> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { agent: false }, (response) => {
      let received = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (received += chunk));
      response.on('error', () => undefined);
      resolve({
        response,
        text: () => received,
        waitForText: (expected) =>
          waitFor(() => received.includes(expected), {
            timeoutMs: 2000,
            intervalMs: 10,
            description: `${JSON.stringify(expected)} in the stream`,
          }).then(() => undefined),
        close: () => request.destroy(),
      });
    });
    request.on('error', reject);
  });
}

describe('GET /events/stream', () => {
  it('sends each new matching event as `event: <type>` and one `data:` line of JSON', async () => {
    const stream = await openStream(`${baseUrl}/events/stream?node=node2`);
    try {
      expect(stream.response.statusCode).toBe(200);
      expect(stream.response.headers['content-type']).toBe('text/event-stream; charset=utf-8');
      expect(stream.response.headers['cache-control']).toBe('no-cache');
      await waitFor(() => log.feedSubscribers === 1, { description: 'the stream subscribed' });

      await store.append(
        'node/node1/role',
        [transition('node1', 'role', 'demoted', '2026-11-21T12:01:00.000Z')],
        'any',
      );
      const [stored] = await store.append(
        'node/node2/role',
        [transition('node2', 'role', 'primary', '2026-11-21T12:01:01.000Z')],
        'any',
      );
      await stream.waitForText('"primary"');

      const expected = `event: role.transition\ndata: ${JSON.stringify(stored)}\n\n`;
      expect(sseFrame(stored)).toBe(expected);
      expect(stream.text()).toBe(expected);
    } finally {
      stream.close();
    }
  });

  it('replays the stored events from `since` or `from_seq` first, then follows', async () => {
    const fromTime = await openStream(`${baseUrl}/events/stream?since=2026-11-21T12:00:02Z`);
    const fromSeq = await openStream(`${baseUrl}/events/stream?stream=node/node1/role&from_seq=2`);
    try {
      await store.append(
        'node/node1/role',
        [transition('node1', 'role', 'demoted', '2026-11-21T12:01:00.000Z')],
        'any',
      );
      await fromTime.waitForText('"demoted"');
      await fromSeq.waitForText('"demoted"');

      const frames = (text: string) =>
        text
          .split('\n\n')
          .filter(Boolean)
          .map((frame) => JSON.parse(frame.split('\ndata: ')[1]) as RecordedEvent);
      expect(summary(frames(fromTime.text()))).toEqual([
        'node/node2/role#1',
        'node/node1/leadership#1',
        'node/node1/role#3',
      ]);
      expect(summary(frames(fromSeq.text()))).toEqual(['node/node1/role#2', 'node/node1/role#3']);
    } finally {
      fromTime.close();
      fromSeq.close();
    }
  });

  it('answers HEAD with the headers alone, without subscribing', async () => {
    const response = await fetch(`${baseUrl}/events/stream`, { method: 'HEAD' });

    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(log.feedSubscribers).toBe(0);
  });

  it('refuses bad parameters with a 400 JSON answer instead of a stream', async () => {
    const response = await fetch(`${baseUrl}/events/stream?limit=0`);

    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: 'Bad Request',
      message: 'limit must be an integer from 1 to 10000, got 0',
      statusCode: 400,
    });
  });

  it('releases its subscription when the client goes away', async () => {
    const streams = await Promise.all([
      openStream(`${baseUrl}/events/stream`),
      openStream(`${baseUrl}/events/stream?type=role.transition`),
    ]);
    await waitFor(() => log.feedSubscribers === 2, { description: 'two subscriptions' });

    streams[0].close();
    await waitFor(() => log.feedSubscribers === 1, { description: 'one subscription released' });
    streams[1].close();
    await waitFor(() => log.feedSubscribers === 0, { description: 'both subscriptions released' });
  });

  it('ends open streams when the application shuts down, so shutdown does not wait for clients', async () => {
    const stream = await openStream(`${baseUrl}/events/stream`);
    const ended = new Promise((resolve) => stream.response.once('end', resolve));
    await waitFor(() => log.feedSubscribers === 1, { description: 'the stream subscribed' });

    await app.close();

    await ended;
    expect(log.feedSubscribers).toBe(0);
  });

  it('sends a comment line as a heartbeat while nothing happens', async () => {
    @Module({
      controllers: [EventsController],
      providers: [
        { provide: EVENT_LOG, useValue: log },
        { provide: SSE_HEARTBEAT_MS, useValue: 50 },
        { provide: APP_FILTER, useClass: HttpExceptionFilter },
      ],
    })
    class HeartbeatModule {}
    const fast = await startApp({ module: HeartbeatModule });
    const stream = await openStream(`${urlOf(fast)}/events/stream`);
    try {
      await stream.waitForText(': heartbeat\n\n: heartbeat\n\n');
      expect(stream.text()).toMatch(/^(: heartbeat\n\n)+$/);
    } finally {
      stream.close();
      await fast.close();
    }
  });
});
