import { NewEvent, RecordedEvent } from '../../src/events/event';
import { EventLog, EventPageRequest, rebuildProjections } from '../../src/events/event-log';
import { EventCursor } from '../../src/events/event-page';
import { EventStore, StreamRange } from '../../src/events/event-store.port';
import { MemoryEventStore } from '../../src/events/memory-event-store';
import { EVENTS_PER_ROUND, PACED_READ } from '../../src/events/store-order-reader';

/** A MemoryEventStore that counts its ranged reads and what they returned. */
class CountingStore extends MemoryEventStore {
  rangedReads: StreamRange[][] = [];
  eventsReadByRange = 0;
  override async readRanges(ranges: StreamRange[]): Promise<RecordedEvent[]> {
    this.rangedReads.push(ranges);
    const events = await super.readRanges(ranges);
    this.eventsReadByRange += events.length;
    return events;
  }
}

let clock = Date.parse('2026-11-24T00:00:00Z');
const at = () => new Date((clock += 1000)).toISOString();
const transition = (node: string, machine: string, to: string): NewEvent => ({
  stream: `node/${node}/${machine}`,
  type: `${machine}.transition`,
  at: at(),
  node,
  from: null,
  to,
  cause: 'TEST',
});
const fact = (type: string, data: Record<string, unknown> = {}): NewEvent => ({
  stream: 'cluster',
  type,
  at: at(),
  node: 'node1',
  from: null,
  to: null,
  cause: 'TEST',
  data,
});
const names = (events: RecordedEvent[]) => events.map((event) => `${event.stream}#${event.seq}`);

/** 3 streams interleaved, 60 events, with a timeline switch early on. */
async function seededStore(store: EventStore): Promise<RecordedEvent[]> {
  await store.append(
    'cluster',
    [
      fact('timeline.created', {
        timeline: 1,
        lsn: 100,
        reason: 'no recovery target specified',
        created_at: at(),
        leader: 'node1',
      }),
    ],
    'any',
  );
  for (let i = 0; i < 20; i++) {
    await store.append('node/node1/postgres', [transition('node1', 'postgres', i % 2 ? 'running' : 'starting')], 'any');
    await store.append('node/node2/role', [transition('node2', 'role', i % 2 ? 'replica' : 'uninitialized')], 'any');
    if (i < 19) await store.append('cluster', [fact(i % 2 ? 'cluster.resumed' : 'cluster.paused')], 'any');
  }
  return store.read();
}

async function startedLog(store: EventStore, maxCachedEvents: number, maxCachedBytes?: number): Promise<EventLog> {
  const log = new EventLog(store, { maxCachedEvents, maxCachedBytes });
  log.start();
  await log.whenLoaded();
  return log;
}

const request = (overrides: Partial<EventPageRequest> = {}): EventPageRequest => ({
  limit: 1000,
  maxBytes: 4 * 1024 * 1024,
  ...overrides,
});

/** Follows `next` from the first page to the last; returns every page. */
async function allPages(log: EventLog, overrides: Partial<EventPageRequest>): Promise<RecordedEvent[][]> {
  const pages: RecordedEvent[][] = [];
  let before: EventCursor | undefined;
  for (let i = 0; i < 100; i++) {
    const page = await log.page(request({ ...overrides, before }));
    pages.push(page.events);
    if (!page.next) return pages;
    before = page.next;
  }
  throw new Error('more than 100 pages');
}

describe('the event log cache', () => {
  const logs: EventLog[] = [];
  afterEach(() => logs.splice(0).forEach((log) => log.stop()));

  it('keeps at most maxCachedEvents recent events, and the projections of the whole log', async () => {
    const store = new MemoryEventStore();
    const all = await seededStore(store);
    const log = await startedLog(store, 10);
    logs.push(log);

    expect(log.cacheSize().events).toBe(10);
    expect(names(log.query())).toEqual(names(all.slice(-10)));
    expect(log.projections()).toEqual(rebuildProjections(all));
    expect(log.projections().history).toHaveLength(1); // from the first event, long evicted
  });

  it('keeps at most maxCachedBytes of JSON, and always the newest event', async () => {
    const store = new MemoryEventStore();
    const all = await seededStore(store);
    const newest = Buffer.byteLength(JSON.stringify(all[all.length - 1]));
    const log = await startedLog(store, 1000, newest * 3 + 10);
    logs.push(log);
    expect(log.cacheSize().events).toBe(3);
    expect(log.cacheSize().bytes).toBeLessThanOrEqual(newest * 3 + 10);

    const tiny = await startedLog(store, 1000, 1);
    logs.push(tiny);
    expect(names(tiny.query())).toEqual(names(all.slice(-1)));
  });

  it('stays bounded as events keep arriving', async () => {
    const store = new MemoryEventStore();
    const log = await startedLog(store, 5);
    logs.push(log);
    for (let i = 0; i < 50; i++) await store.append('cluster', [fact('cluster.paused')], 'any');
    expect(log.cacheSize().events).toBe(5);
    expect(names(log.query())).toEqual(['cluster#46', 'cluster#47', 'cluster#48', 'cluster#49', 'cluster#50']);
  });

  it('reads the stored log at start in paced rounds of at most 500 events, and says how many it read', async () => {
    const store = new CountingStore();
    for (let i = 0; i < 2000; i++) await store.append('cluster', [fact('cluster.paused')], 'any');
    const said: string[] = [];
    const log = new EventLog(store, { maxCachedEvents: 100 });
    logs.push(log);
    const started = performance.now();
    log.start(undefined, (message) => said.push(message));
    await log.whenLoaded();

    expect(
      Math.max(
        ...store.rangedReads.map((ranges) => ranges.reduce((sum, range) => sum + range.toSeq - range.fromSeq + 1, 0)),
      ),
    ).toBe(PACED_READ.eventsPerRound);
    // Four rounds, a pause after each of the first three.
    expect(performance.now() - started).toBeGreaterThanOrEqual(3 * PACED_READ.pauseMs - 5);
    expect(said).toEqual([expect.stringMatching(/^event log read: 2000 events in \d+\.\d s$/)]);
  });

  it('reads the stored log at start in bounded batches, never all of it at once', async () => {
    const store = new CountingStore();
    const streams = ['cluster', 'node/node1/postgres', 'node/node2/role'];
    for (let i = 0; i < 3000; i++) await store.append(streams[i % 3], [fact('cluster.paused')], 'any');
    const largestRead = () =>
      Math.max(
        ...store.rangedReads.map((ranges) => ranges.reduce((sum, range) => sum + range.toSeq - range.fromSeq + 1, 0)),
      );

    const log = await startedLog(store, 100);
    logs.push(log);

    expect(store.eventsReadByRange).toBeGreaterThanOrEqual(3000);
    expect(largestRead()).toBeLessThanOrEqual(EVENTS_PER_ROUND);
    expect(log.projections()).toEqual(rebuildProjections(await store.read()));
    expect(names(log.query())).toEqual(names((await store.read()).slice(-100)));
  });

  it('reads events older than the cache from the store, by seq range, only when a query asks for them', async () => {
    const store = new CountingStore();
    const all = await seededStore(store);
    const log = await startedLog(store, 10);
    logs.push(log);
    store.rangedReads = []; // the start-up read of the log

    const recent = await log.page(request({ limit: 5 }));
    expect(names(recent.events)).toEqual(names(all.slice(-5)));
    expect(store.rangedReads).toEqual([]);

    const whole = await log.page(request({ stream: 'node/node1/postgres', fromSeq: 1 }));
    expect(names(whole.events)).toEqual(names(all.filter((event) => event.stream === 'node/node1/postgres')));
    expect(whole.next).toBeNull();
    expect(store.rangedReads.flat().every((range) => range.stream === 'node/node1/postgres')).toBe(true);
  });

  it('answers every event exactly once, in store order, when pages are followed back to the start', async () => {
    const store = new MemoryEventStore();
    const all = await seededStore(store);
    const log = await startedLog(store, 7);
    logs.push(log);

    for (const limit of [1, 4, 25, 1000]) {
      const pages = await allPages(log, { limit });
      pages.forEach((page) => expect(page.length).toBeLessThanOrEqual(limit));
      expect(names(pages.reverse().flat())).toEqual(names(all));
    }
  });

  it('pages with filters too, cache and store alike', async () => {
    const store = new MemoryEventStore();
    const all = await seededStore(store);
    const log = await startedLog(store, 7);
    logs.push(log);

    const byType = (await allPages(log, { type: 'role.transition', limit: 3 })).reverse().flat();
    expect(names(byType)).toEqual(names(all.filter((event) => event.type === 'role.transition')));
    const byNode = (await allPages(log, { node: 'node2', limit: 6 })).reverse().flat();
    expect(names(byNode)).toEqual(names(all.filter((event) => event.node === 'node2')));
    const since = Date.parse(all[30].at);
    const recent = (await allPages(log, { since, limit: 4 })).reverse().flat();
    expect(names(recent)).toEqual(names(all.slice(30)));
  });

  it('never brings back events newer than the first page, even when streams appear later', async () => {
    const store = new MemoryEventStore();
    await seededStore(store);
    const log = await startedLog(store, 7);
    logs.push(log);
    const first = await log.page(request({ limit: 5 }));

    await store.append('node/node3/role', [transition('node3', 'role', 'replica')], 'any');
    await store.append('cluster', [fact('cluster.paused')], 'any');
    const second = await log.page(request({ limit: 5, before: first.next! }));

    expect(
      second.events.some(
        (event) => event.node === 'node3' || event.seq > first.events[first.events.length - 1].seq + 100,
      ),
    ).toBe(false);
    const firstTimes = first.events.map((event) => event.at);
    expect(second.events.every((event) => event.at < firstTimes[0])).toBe(true);
  });

  it('keeps each page within maxBytes, leaving its oldest events for the next page', async () => {
    const store = new MemoryEventStore();
    for (let i = 0; i < 20; i++)
      await store.append('cluster', [fact('config.changed', { blob: 'x'.repeat(10_000), i })], 'any');
    const log = await startedLog(store, 5);
    logs.push(log);

    const pages = await allPages(log, { maxBytes: 45_000 });
    pages.forEach((page) => expect(Buffer.byteLength(JSON.stringify(page))).toBeLessThanOrEqual(45_000));
    expect(pages.map((page) => page.length)).toEqual([4, 4, 4, 4, 4]);
    expect(
      pages
        .reverse()
        .flat()
        .map((event) => event.data?.i),
    ).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });
});
