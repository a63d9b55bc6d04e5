import { NewEvent, RecordedEvent } from '../../src/events/event';
import { MemoryEventStore } from '../../src/events/memory-event-store';
import { readInStoreOrder, readNewestFirst } from '../../src/events/store-order-reader';

/** A deterministic pseudo-random sequence, so a failure can be replayed. */
function random(seed: number): () => number {
  let state = seed;
  return () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

async function interleavedStore(seed: number, streams: number, events: number): Promise<MemoryEventStore> {
  const next = random(seed);
  const store = new MemoryEventStore();
  for (let i = 0; i < events; i++) {
    // Skewed: some streams are far busier than others, as a node's ha stream is.
    const stream = `node/n${Math.floor(next() ** 2 * streams)}/role`;
    const event: NewEvent = {
      stream,
      type: 'role.note',
      at: new Date(Date.UTC(2026, 0, 1) + i).toISOString(),
      node: 'n',
      from: null,
      to: String(i),
      cause: 'test',
    };
    await store.append(stream, [event], 'any');
  }
  return store;
}

const names = (events: RecordedEvent[]) => events.map((event) => `${event.stream}#${event.seq}`);

describe('readInStoreOrder', () => {
  it.each([
    [1, 3, 200, 7],
    [2, 10, 500, 25],
    [3, 5, 300, 1],
    [4, 1, 50, 4],
  ])(
    'hands over every event once, in store order, a bounded batch at a time (seed %i, %i streams, %i events, %i per round)',
    async (seed, streams, count, perRound) => {
      const store = await interleavedStore(seed, streams, count);
      const batches: RecordedEvent[][] = [];

      await readInStoreOrder(store, null, (batch) => void batches.push(batch), perRound);

      expect(names(batches.flat())).toEqual(names(await store.read()));
      const activeStreams = new Set((await store.read()).map((event) => event.stream)).size;
      batches.forEach((batch) => expect(batch.length).toBeLessThanOrEqual(Math.max(perRound, activeStreams)));
    },
  );

  it('starts after the checkpoint and stops when asked', async () => {
    const store = await interleavedStore(5, 4, 100);
    const all = await store.read();
    const checkpoint = {
      cutAt: '',
      projections: {} as never,
      streams: Object.fromEntries(
        [...new Set(all.map((e) => e.stream))].map((stream) => [stream, { seq: 3, hash: '', at: '' }]),
      ),
    };
    const handed: RecordedEvent[] = [];

    await readInStoreOrder(store, checkpoint, (batch) => void handed.push(...batch), 10);
    expect(names(handed)).toEqual(names(all.filter((event) => event.seq > 3)));

    let batches = 0;
    await readInStoreOrder(store, null, () => ++batches < 2, 10);
    expect(batches).toBe(2);
  });
});

describe('readNewestFirst', () => {
  it.each([
    [1, 3, 200, 7],
    [2, 10, 500, 25],
    [3, 5, 300, 1],
    [4, 1, 50, 4],
  ])(
    'hands over every event once, newest first, a bounded batch at a time (seed %i, %i streams, %i events, %i per round)',
    async (seed, streams, count, perRound) => {
      const store = await interleavedStore(seed, streams, count);
      const batches: RecordedEvent[][] = [];

      await readNewestFirst(store, null, (batch) => void batches.push(batch), perRound);

      expect(names(batches.flat())).toEqual(names(await store.read()).reverse());
      const activeStreams = new Set((await store.read()).map((event) => event.stream)).size;
      batches.forEach((batch) => expect(batch.length).toBeLessThanOrEqual(Math.max(perRound, activeStreams)));
    },
  );

  it('stops at the checkpoint and when asked', async () => {
    const store = await interleavedStore(6, 4, 100);
    const all = await store.read();
    const checkpoint = {
      cutAt: '',
      projections: {} as never,
      streams: Object.fromEntries(
        [...new Set(all.map((e) => e.stream))].map((stream) => [stream, { seq: 3, hash: '', at: '' }]),
      ),
    };
    const handed: RecordedEvent[] = [];

    await readNewestFirst(store, checkpoint, (batch) => void handed.push(...batch), 10);
    expect(names(handed)).toEqual(names(all.filter((event) => event.seq > 3)).reverse());

    let batches = 0;
    await readNewestFirst(store, null, () => ++batches < 2, 10);
    expect(batches).toBe(2);
  });
});
