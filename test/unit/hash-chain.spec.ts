import { NewEvent, RecordedEvent } from '../../src/events/event';
import { ExpectedVersionConflict } from '../../src/events/event-store.port';
import { canonicalJson, chainEvents, eventHash, verifyChain } from '../../src/events/hash-chain';
import { MemoryEventStore } from '../../src/events/memory-event-store';

let at = Date.parse('2026-01-01T00:00:00Z');
const event = (stream: string, to: string, data?: Record<string, unknown>): NewEvent => ({
  stream,
  type: stream === 'cluster' ? 'leader.acquired' : 'postgres.transition',
  at: new Date(at++).toISOString(),
  node: 'node1',
  from: null,
  to,
  cause: 'test',
  ...(data ? { data } : {}),
});

/** Two interleaved streams, chained by the in-memory store: indexes 0..6. */
async function interleavedLog(): Promise<RecordedEvent[]> {
  const store = new MemoryEventStore();
  const a = 'node/node1/postgres';
  for (const [stream, to] of [
    [a, 'a1'],
    ['cluster', 'c1'],
    [a, 'a2'],
    [a, 'a3'],
    ['cluster', 'c2'],
    [a, 'a4'],
    [a, 'a5'],
  ]) {
    await store.append(stream, [event(stream, to, { n: to })], 'any');
  }
  return store.read();
}
const positions = (problems: ReturnType<typeof verifyChain>) =>
  problems.map((p) => `${p.kind} ${p.stream}#${p.seq} @${p.index}`);

describe('canonicalJson', () => {
  it('sorts keys at every depth, keeps array order and writes no whitespace', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: true, y: null }], c: 'x y' } })).toBe(
      '{"a":{"c":"x y","d":[3,{"y":null,"z":true}]},"b":1}',
    );
  });

  it('gives the same text whatever the key order, and leaves out undefined as JSON does', () => {
    expect(canonicalJson({ x: 1, y: { q: 2, p: undefined, r: [undefined] } })).toBe(
      canonicalJson({ y: { r: [null], q: 2 }, x: 1 }),
    );
    expect(canonicalJson({ when: new Date('2026-01-01T00:00:00Z'), n: Number.NaN })).toBe(
      '{"n":null,"when":"2026-01-01T00:00:00.000Z"}',
    );
  });

  it('sorts integer-like keys as strings, not in JavaScript property order', () => {
    expect(canonicalJson({ 10: 'a', 9: 'b', a: 'c' })).toBe('{"10":"a","9":"b","a":"c"}');
  });

  it('keeps the hash of a fixed event stable across versions (the format is a contract)', () => {
    const fixed = {
      stream: 'node/n1/role',
      seq: 1,
      type: 'role.transition',
      at: '2026-01-01T00:00:00.000Z',
      node: 'n1',
      from: null,
      to: 'uninitialized',
      cause: 'xstate.init',
      data: { event: { type: 'xstate.init' } },
    };
    expect(canonicalJson({ ...fixed, prev: '' })).toBe(
      '{"at":"2026-01-01T00:00:00.000Z","cause":"xstate.init","data":{"event":{"type":"xstate.init"}},"from":null,"node":"n1","prev":"","seq":1,"stream":"node/n1/role","to":"uninitialized","type":"role.transition"}',
    );
    expect(eventHash(fixed, '')).toBe('063377ff4463d6a73f861b4deddb09a52759e707dd1b02e64f1837e2df13aea0');
  });
});

describe('eventHash', () => {
  const base = {
    stream: 's',
    seq: 1,
    type: 't',
    at: '2026-01-01T00:00:00.000Z',
    node: 'n',
    from: 'a',
    to: 'b',
    cause: 'c',
    data: { k: 1 },
  };

  it('changes with every content field and with prev', () => {
    const hash = eventHash(base, '');
    for (const change of [
      { seq: 2 },
      { to: 'x' },
      { from: null },
      { data: { k: 2 } },
      { at: '2026-01-01T00:00:00.001Z' },
    ]) {
      expect(eventHash({ ...base, ...change }, '')).not.toBe(hash);
    }
    expect(eventHash(base, 'f'.repeat(64))).not.toBe(hash);
  });

  it('ignores the stored prev and hash fields themselves', () => {
    expect(eventHash({ ...base, prev: 'x', hash: 'y' } as RecordedEvent, '')).toBe(eventHash(base, ''));
  });
});

describe('verifyChain', () => {
  it('finds nothing wrong in a log as the store wrote it', async () => {
    expect(verifyChain(await interleavedLog())).toEqual([]);
  });

  it('detects an altered event where it is, and only there', async () => {
    const events = await interleavedLog();
    events[3] = { ...events[3], data: { n: 'tampered' } };
    expect(positions(verifyChain(events))).toEqual(['altered node/node1/postgres#3 @3']);
  });

  it('detects an event altered along with its hash as a broken link at the next one', async () => {
    const events = await interleavedLog();
    const altered = { ...events[2], to: 'tampered' };
    events[2] = { ...altered, hash: eventHash(altered, altered.prev ?? '') };
    expect(positions(verifyChain(events))).toEqual(['broken-link node/node1/postgres#3 @3']);
  });

  it('detects a removed event at the next event of its stream', async () => {
    const events = await interleavedLog();
    events.splice(2, 1); // node/node1/postgres#2
    expect(verifyChain(events)).toEqual([
      expect.objectContaining({
        kind: 'removed',
        stream: 'node/node1/postgres',
        seq: 3,
        index: 2,
        message: '#2 is missing before it',
      }),
    ]);
  });

  it('detects a removed first event and several removed in a row', async () => {
    const first = (await interleavedLog()).filter((_, index) => index !== 0);
    expect(positions(verifyChain(first))).toEqual(['removed node/node1/postgres#2 @1']);
    const run = (await interleavedLog()).filter((_, index) => index !== 2 && index !== 3);
    expect(verifyChain(run)[0]).toMatchObject({
      kind: 'removed',
      seq: 4,
      index: 3,
      message: '#2..#3 are missing before it',
    });
  });

  it('detects two swapped events of a stream as one reordering, at the one that came too late', async () => {
    const events = await interleavedLog();
    [events[2], events[3]] = [events[3], events[2]]; // #3 before #2
    expect(positions(verifyChain(events))).toEqual(['reordered node/node1/postgres#2 @3']);
  });

  it('accepts events of different streams in any interleaving', async () => {
    const events = await interleavedLog();
    [events[0], events[1]] = [events[1], events[0]];
    expect(verifyChain(events)).toEqual([]);
  });

  it('accepts unchained history followed by a chain that starts from it with prev ""', () => {
    const legacy = [1, 2].map((seq) => ({ ...event('cluster', `old${seq}`), seq }) as RecordedEvent);
    const chained = chainEvents('cluster', [event('cluster', 'new1'), event('cluster', 'new2')], { seq: 2, hash: '' });
    expect(verifyChain([...legacy, ...chained])).toEqual([]);
  });

  it('reports a hash stripped from an event after chained ones', async () => {
    const events = await interleavedLog();
    const { hash: _hash, prev: _prev, ...stripped } = events[5];
    events[5] = stripped;
    expect(positions(verifyChain(events))).toEqual(['altered node/node1/postgres#4 @5']);
  });
});

describe('MemoryEventStore hash chain', () => {
  it('chains each append to the stream head left by the previous one, per stream', async () => {
    const store = new MemoryEventStore();
    const [first, second] = await store.append('cluster', [event('cluster', 'a'), event('cluster', 'b')], 0);
    const [other] = await store.append('node/node1/postgres', [event('node/node1/postgres', 'x')], 0);
    const [third] = await store.append('cluster', [event('cluster', 'c')], 'any');

    expect(first.prev).toBe('');
    expect(second.prev).toBe(first.hash);
    expect(third).toMatchObject({ seq: 3, prev: second.hash });
    expect(other).toMatchObject({ seq: 1, prev: '' });
    expect(third.hash).toBe(eventHash(third, second.hash!));
    expect(await store.read()).toEqual([first, second, other, third]);
    expect(verifyChain(await store.read())).toEqual([]);
  });

  it('still refuses an append at a stale version, leaving the chain as it was', async () => {
    const store = new MemoryEventStore();
    await store.append('cluster', [event('cluster', 'a')], 0);
    await expect(store.append('cluster', [event('cluster', 'b')], 0)).rejects.toEqual(
      new ExpectedVersionConflict('cluster', 0, 1),
    );
    const [next] = await store.append('cluster', [event('cluster', 'b')], 1);
    expect(next.prev).toBe((await store.read())[0].hash);
  });

  it('stores what it hashed: content passed through JSON, stored fields of the caller ignored', async () => {
    const store = new MemoryEventStore();
    const withExtras = {
      ...event('cluster', 'a', { when: new Date('2026-01-01T00:00:00Z'), gone: undefined }),
      prev: 'forged',
      hash: 'forged',
    };
    const [stored] = await store.append('cluster', [withExtras], 0);
    expect(stored.data).toEqual({ when: '2026-01-01T00:00:00.000Z' });
    expect(stored.prev).toBe('');
    expect(verifyChain([stored])).toEqual([]);
  });
});
