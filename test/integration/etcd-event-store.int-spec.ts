import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Subscription } from 'rxjs';
import { systemClock } from '../../src/common/clock';
import { EtcdClient } from '../../src/dcs/etcd/etcd-client';
import { NewEvent, RecordedEvent } from '../../src/events/event';
import { EventRecorder, QUEUE_FILE } from '../../src/events/event-recorder';
import { ExpectedVersion, ExpectedVersionConflict } from '../../src/events/event-store.port';
import { EtcdEventStore } from '../../src/events/etcd-event-store';
import { verifyChain } from '../../src/events/hash-chain';
import { MAX_EVENT_DATA_BYTES } from '../../src/events/event-bounds';
import { EventRetention } from '../../src/events/event-retention';
import { ManualClock } from '../../src/common/clock';
import { runAudit } from '../../src/audit/audit-cli';
import { EtcdHandle, startEtcd } from '../helpers/etcd';
import { removeDir, tmpDir } from '../helpers/tmp';
import { waitFor } from '../helpers/wait-for';

// Worst case of the slowest test, every wait and request running into its own deadline: the etcd
// restart test (5 s + restart up to 10 s + two 2 s requests + 5 s), plus close().
jest.setTimeout(60_000);

/**
 * A full (major) garbage collection, as happens at random moments in a long test run. jest does
 * not run with --expose-gc, so the flag is set for just long enough to fetch `gc` from a new context.
 */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  setFlagsFromString('--no-expose-gc');
  gc();
}

let at = Date.parse('2026-01-01T00:00:00Z');
const event = (stream: string, to: string, node = 'node1'): NewEvent => ({
  stream,
  type: stream === 'cluster' ? 'leader.acquired' : 'postgres.transition',
  at: new Date(at++).toISOString(),
  node,
  from: null,
  to,
  cause: 'test',
});
const summary = (events: RecordedEvent[]) => events.map((e) => `${e.stream}#${e.seq}:${e.to}`);

describe(`${EtcdEventStore.name} against etcd`, () => {
  let etcd: EtcdHandle;
  let scope: string;
  let scopeCounter = 0;
  const opened: EtcdEventStore[] = [];
  const subscriptions: Subscription[] = [];
  const newStore = (requestTimeoutMs = 2000) => {
    const store = new EtcdEventStore({ hosts: [etcd.endpoint], scope, requestTimeoutMs });
    opened.push(store);
    return store;
  };

  beforeAll(async () => {
    etcd = await startEtcd();
  });
  afterAll(async () => {
    await etcd.stop();
  });
  beforeEach(() => {
    scope = `events${++scopeCounter}`;
  });
  afterEach(async () => {
    subscriptions.splice(0).forEach((subscription) => subscription.unsubscribe());
    await Promise.all(opened.splice(0).map((store) => store.close()));
  });

  it('reads one stream by seq and all streams in store order', async () => {
    const store = newStore();
    await store.append('node/node1/postgres', [event('node/node1/postgres', 'starting')], 0);
    await store.append('cluster', [event('cluster', 'node1')], 'any');
    await store.append(
      'node/node1/postgres',
      [event('node/node1/postgres', 'running'), event('node/node1/postgres', 'stopping')],
      1,
    );
    await store.append('node/node1', [event('node/node1', 'nested-prefix')], 0);

    expect(summary(await store.read())).toEqual([
      'node/node1/postgres#1:starting',
      'cluster#1:node1',
      'node/node1/postgres#2:running',
      'node/node1/postgres#3:stopping',
      'node/node1#1:nested-prefix',
    ]);
    expect(summary(await store.read({ stream: 'node/node1/postgres', fromSeq: 2 }))).toEqual([
      'node/node1/postgres#2:running',
      'node/node1/postgres#3:stopping',
    ]);
    expect(summary(await store.read({ stream: 'node/node1' }))).toEqual(['node/node1#1:nested-prefix']);
    expect(await store.lastSeq('node/node1/postgres')).toBe(3);
    expect(await store.lastSeq('node/node9/postgres')).toBe(0);
  });

  it('keeps events under their own prefix, one key per event plus a head per stream', async () => {
    const store = newStore();
    const [stored] = await store.append('node/node1/postgres', [event('node/node1/postgres', 'starting')], 0);
    const raw = new EtcdClient({ hosts: [etcd.endpoint] });
    try {
      const keys = await raw.range(`/stator-events/${scope}/`, { prefix: true }, 1000);
      expect(keys.kvs.map((kv) => [kv.key, JSON.parse(kv.value)])).toEqual([
        [`/stator-events/${scope}/heads/node/node1/postgres`, { seq: 1, hash: stored.hash }],
        [`/stator-events/${scope}/node/node1/postgres/000000000001`, stored],
      ]);
    } finally {
      raw.close();
    }
  });

  it('keeps the logs of one scope in two namespaces apart (staging and production on one etcd)', async () => {
    const production = newStore();
    const staging = new EtcdEventStore({
      hosts: [etcd.endpoint],
      scope,
      namespace: '/staging/eu',
      requestTimeoutMs: 2000,
    });
    opened.push(staging);
    await production.append('cluster', [event('cluster', 'production-leader')], 'any');
    await staging.append('cluster', [event('cluster', 'staging-leader')], 'any');
    expect(summary(await production.read())).toEqual(['cluster#1:production-leader']);
    expect(summary(await staging.read())).toEqual(['cluster#1:staging-leader']);
    const raw = new EtcdClient({ hosts: [etcd.endpoint] });
    try {
      expect(
        (await raw.range(`/stator-events-ns/%2Fstaging%2Feu/${scope}/`, { prefix: true }, 1000)).kvs.map(
          (kv) => kv.key,
        ),
      ).toEqual([
        `/stator-events-ns/%2Fstaging%2Feu/${scope}/cluster/000000000001`,
        `/stator-events-ns/%2Fstaging%2Feu/${scope}/heads/cluster`,
      ]);
    } finally {
      raw.close();
    }
    const output: string[] = [];
    const io = { stdout: (text: string) => output.push(text), stderr: (text: string) => output.push(text), env: {} };
    expect(
      await runAudit(['export', '--etcd', etcd.endpoint, '--scope', scope, '--namespace', 'staging/eu/'], io),
    ).toBe(0);
    expect(output.join('')).toContain('"to":"staging-leader"');
    expect(output.join('')).not.toContain('production-leader');
  });

  it('chains every stream across appends, writers and store instances', async () => {
    const [first, second] = [newStore(), newStore()];
    await first.append(
      'node/node1/postgres',
      [event('node/node1/postgres', 'a'), event('node/node1/postgres', 'b')],
      0,
    );
    // The other instance appends at the position it expects; the first then appends with a stale cached head.
    await second.append('node/node1/postgres', [event('node/node1/postgres', 'c')], 2);
    await first.append('node/node1/postgres', [event('node/node1/postgres', 'd')], 'any');
    await expect(first.append('node/node1/postgres', [event('node/node1/postgres', 'x')], 2)).rejects.toMatchObject({
      actual: 4,
    });
    await Promise.all(
      [first, second, newStore()].map((store, index) =>
        store.append('cluster', [event('cluster', `w${index}`)], 'any'),
      ),
    );

    const events = await newStore().read();
    const postgres = events.filter((e) => e.stream === 'node/node1/postgres');
    expect(postgres.map((e) => [e.seq, e.to])).toEqual([
      [1, 'a'],
      [2, 'b'],
      [3, 'c'],
      [4, 'd'],
    ]);
    postgres.slice(1).forEach((e, i) => expect(e.prev).toBe(postgres[i].hash));
    expect(events.filter((e) => e.stream === 'cluster').map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(verifyChain(events)).toEqual([]);
  });

  it('continues a stream whose head an older version wrote as a bare number, chaining from there', async () => {
    const raw = new EtcdClient({ hosts: [etcd.endpoint] });
    const prefix = `/stator-events/${scope}/`;
    try {
      // As versions before the hash chain stored them: no prev/hash, head = last seq.
      for (const seq of [1, 2]) {
        await raw.put(
          `${prefix}cluster/${String(seq).padStart(12, '0')}`,
          JSON.stringify({ ...event('cluster', `old${seq}`), seq }),
          {},
          1000,
        );
      }
      await raw.put(`${prefix}heads/cluster`, '2', {}, 1000);
      const store = newStore();
      expect(await store.lastSeq('cluster')).toBe(2);
      const [third] = await store.append('cluster', [event('cluster', 'new')], 2);
      expect(third).toMatchObject({ seq: 3, prev: '' });
      const [fourth] = await store.append('cluster', [event('cluster', 'newer')], 'any');
      expect(fourth).toMatchObject({ seq: 4, prev: third.hash });
      expect(verifyChain(await store.read())).toEqual([]);
      expect(JSON.parse((await raw.range(`${prefix}heads/cluster`, {}, 1000)).kvs[0].value)).toEqual({
        seq: 4,
        hash: fourth.hash,
      });
    } finally {
      raw.close();
    }
  });

  it('rejects an append at a stale or future version with ExpectedVersionConflict', async () => {
    const store = newStore();
    await store.append('cluster', [event('cluster', 'a'), event('cluster', 'b')], 0);
    await expect(store.append('cluster', [event('cluster', 'c')], 0)).rejects.toEqual(
      new ExpectedVersionConflict('cluster', 0, 2),
    );
    await expect(store.append('cluster', [event('cluster', 'c')], 1)).rejects.toMatchObject({ expected: 1, actual: 2 });
    await expect(store.append('cluster', [event('cluster', 'c')], 5)).rejects.toMatchObject({ expected: 5, actual: 2 });
    expect(summary(await store.read({ stream: 'cluster' }))).toEqual(['cluster#1:a', 'cluster#2:b']);
  });

  it('appends several streams in one txn: one revision, read, ranged and watched in the order given; a stale head stores none', async () => {
    const store = newStore();
    const [pg, role] = ['node/node1/postgres', 'node/node1/role'];
    await store.append(role, [event(role, 'r1')], 0);
    await store.append('cluster', [event('cluster', 'c1')], 'any');
    const received: RecordedEvent[] = [];
    subscriptions.push(store.subscribe().subscribe((e) => received.push(e)));
    // Another writer moves the cluster stream's head past the one this store knows: 'any' follows it.
    await newStore().append('cluster', [event('cluster', 'c2', 'node2')], 'any');

    // Neither seq nor stream name gives this order: only the place in the txn does.
    const given = [event(role, 'r2'), event(pg, 'p1'), event('cluster', 'c3'), event(role, 'r3'), event(pg, 'p2')];
    const stored = await store.appendStreams(
      given,
      new Map<string, ExpectedVersion>([
        [pg, 0],
        [role, 1],
        ['cluster', 'any'],
      ]),
    );
    const inOrder = [
      'node/node1/role#2:r2',
      'node/node1/postgres#1:p1',
      'cluster#3:c3',
      'node/node1/role#3:r3',
      'node/node1/postgres#2:p2',
    ];
    expect(summary(stored)).toEqual(inOrder);
    expect(summary(await store.read()).slice(-5)).toEqual(inOrder);
    expect(
      summary(
        await newStore().readRanges([
          { stream: pg, fromSeq: 1, toSeq: 2 },
          { stream: role, fromSeq: 2, toSeq: 3 },
          { stream: 'cluster', fromSeq: 3, toSeq: 3 },
        ]),
      ),
    ).toEqual(inOrder);
    await waitFor(() => received.length === 6, { description: "the other writer's event and the five appended" });
    expect(summary(received).slice(1)).toEqual(inOrder);
    const raw = new EtcdClient({ hosts: [etcd.endpoint] });
    try {
      const keys = await raw.range(`/stator-events/${scope}/node/`, { prefix: true }, 1000);
      const revisions = new Set(keys.kvs.filter((kv) => !kv.key.endsWith('r1')).map((kv) => kv.modRevision));
      expect(keys.kvs).toHaveLength(5);
      expect(revisions.size).toBe(2); // r1's append, and the txn of the five (cluster's key is not under node/)
    } finally {
      raw.close();
    }
    expect(verifyChain(await store.read())).toEqual([]);

    // The postgres stream's head is 2, not 1: nothing is stored, the role stream's event neither.
    await expect(
      store.appendStreams(
        [event(role, 'r4'), event(pg, 'p3')],
        new Map([
          [role, 3],
          [pg, 1],
        ]),
      ),
    ).rejects.toEqual(new ExpectedVersionConflict(pg, 1, 2));
    expect(await store.lastSeq(role)).toBe(3);
    expect(await store.lastSeq(pg)).toBe(2);
  });

  it("gives racing 'any' appends distinct consecutive seqs", async () => {
    const stores = [newStore(), newStore(), newStore()];
    await Promise.all(
      stores.map((store, index) => store.append('cluster', [event('cluster', `writer${index}`)], 'any')),
    );
    const stored = await stores[0].read({ stream: 'cluster' });
    expect(stored.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(stored.map((e) => e.to).sort()).toEqual(['writer0', 'writer1', 'writer2']);
  });

  it('emits events appended after subscribing, in store order, from any writer', async () => {
    const store = newStore();
    await store.append('cluster', [event('cluster', 'before')], 'any');
    const received: RecordedEvent[] = [];
    subscriptions.push(store.subscribe().subscribe((e) => received.push(e)));
    const otherWriter = newStore();
    await otherWriter.append('node/node2/postgres', [event('node/node2/postgres', 'starting', 'node2')], 0);
    await store.append('cluster', [event('cluster', 'after')], 'any');
    await waitFor(() => received.length === 2, { description: 'both appended events on the subscription' });
    expect(summary(received)).toEqual(['node/node2/postgres#1:starting', 'cluster#2:after']);
  });

  it('resumes a subscription after an etcd restart without losing or repeating events', async () => {
    const store = newStore();
    await store.append('cluster', [event('cluster', 'first')], 'any');
    const received: RecordedEvent[] = [];
    subscriptions.push(store.subscribe().subscribe((e) => received.push(e)));
    await store.append('cluster', [event('cluster', 'second')], 'any');
    await waitFor(() => received.length === 1, { description: 'the event appended before the restart' });
    await etcd.restart();
    await newStore().append('cluster', [event('cluster', 'third')], 'any');
    await waitFor(() => received.length >= 2, { timeoutMs: 5000, description: 'the event appended after the restart' });
    expect(summary(received)).toEqual(['cluster#2:second', 'cluster#3:third']);
  });

  it('reads seq ranges of several streams in store order, without the rest of the log', async () => {
    const store = newStore();
    for (let i = 1; i <= 5; i++) {
      await store.append('node/node1/postgres', [event('node/node1/postgres', `p${i}`)], 'any');
      await store.append('cluster', [event('cluster', `c${i}`)], 'any');
    }
    await store.append('node/node1', [event('node/node1', 'nested-prefix')], 0);

    const ranged = await store.readRanges([
      { stream: 'cluster', fromSeq: 2, toSeq: 3 },
      { stream: 'node/node1/postgres', fromSeq: 3, toSeq: 9 },
      { stream: 'node/node1', fromSeq: 2, toSeq: 1 },
    ]);

    // Store order interleaves the streams as they were appended: p3 before c3.
    expect(summary(ranged)).toEqual([
      'cluster#2:c2',
      'node/node1/postgres#3:p3',
      'cluster#3:c3',
      'node/node1/postgres#4:p4',
      'node/node1/postgres#5:p5',
    ]);
    await expect(store.readRanges([{ stream: 'cluster', fromSeq: 1, toSeq: 20_001 }])).rejects.toThrow(
      'a ranged read of 20001 events exceeds 20000',
    );
  });

  it('retention: removes the oldest events from etcd behind a checkpoint, once, and the retained chain verifies', async () => {
    const store = newStore();
    for (let i = 1; i <= 6; i++) {
      // Not a machine transition: the audit's replay of the machines has nothing to check here.
      await store.append(
        'node/node1/postgres',
        [{ ...event('node/node1/postgres', `p${i}`), type: 'postgres.note' }],
        'any',
      );
      await store.append(
        'cluster',
        [
          {
            ...event('cluster', `c${i}`),
            type: 'timeline.created',
            data: { timeline: i, lsn: i, reason: 'r', created_at: 'x', leader: 'node1' },
          },
        ],
        'any',
      );
    }
    const original = await store.read();
    const received: RecordedEvent[] = [];
    subscriptions.push(store.subscribe().subscribe((e) => received.push(e)));
    const runs = [newStore(), newStore()].map(
      (writer) => new EventRetention({ store: writer, clock: new ManualClock(), policy: { maxEventsPerStream: 2 } }),
    );

    const outcomes = await Promise.all(runs.map((run) => run.runOnce()));

    expect(
      outcomes.filter((outcome) => outcome.skipped === 'another node cut the log meanwhile').length,
    ).toBeLessThanOrEqual(1);
    expect(outcomes.some((outcome) => outcome.removed['cluster'] === 4)).toBe(true);
    const raw = new EtcdClient({ hosts: [etcd.endpoint] });
    try {
      const keys = (await raw.range(`/stator-events/${scope}/`, { prefix: true }, 1000)).kvs.map((kv) =>
        kv.key.slice(`/stator-events/${scope}/`.length),
      );
      expect(keys.filter((key) => !key.startsWith('heads/'))).toEqual([
        'checkpoint',
        'cluster/000000000005',
        'cluster/000000000006',
        'node/node1/postgres/000000000005',
        'node/node1/postgres/000000000006',
      ]);
    } finally {
      raw.close();
    }
    const checkpoint = (await newStore().readCheckpoint())!;
    const byName = (stream: string, seq: number) => original.find((e) => e.stream === stream && e.seq === seq)!;
    expect(checkpoint.streams).toEqual({
      cluster: { seq: 4, hash: byName('cluster', 4).hash, at: byName('cluster', 4).at },
      'node/node1/postgres': {
        seq: 4,
        hash: byName('node/node1/postgres', 4).hash,
        at: byName('node/node1/postgres', 4).at,
      },
    });
    expect(checkpoint.projections.history.map((entry) => entry[0])).toEqual([1, 2, 3, 4]);
    const retained = await newStore().read();
    expect(summary(retained)).toEqual(summary(original.slice(-4)));
    expect(verifyChain(retained, checkpoint.streams)).toEqual([]);

    // The chain goes on after the cut, and the checkpoint key is never taken for an event.
    await store.append('cluster', [event('cluster', 'after-cut')], 'any');
    await waitFor(() => received.length === 1, { description: 'the event appended after the cut' });
    expect(summary(received)).toEqual(['cluster#7:after-cut']);
    expect(verifyChain(await newStore().read(), checkpoint.streams)).toEqual([]);

    // `stator audit verify --etcd` reads the checkpoint with the events and says where the chains start.
    const output: string[] = [];
    const io = { stdout: (text: string) => output.push(text), stderr: (text: string) => output.push(text), env: {} };
    expect(await runAudit(['verify', '--etcd', etcd.endpoint, '--scope', scope], io)).toBe(0);
    expect(output.join('')).toMatch(
      /✔ hash chains: 5 events in 2 streams, every link intact; 2 streams start at the retention checkpoint of /,
    );
    // A retained event altered in place is still found.
    const raw2 = new EtcdClient({ hosts: [etcd.endpoint] });
    try {
      const key = `/stator-events/${scope}/cluster/000000000005`;
      const stored = JSON.parse((await raw2.range(key, {}, 1000)).kvs[0].value) as RecordedEvent;
      await raw2.put(key, JSON.stringify({ ...stored, to: 'tampered' }), {}, 1000);
    } finally {
      raw2.close();
    }
    output.length = 0;
    expect(await runAudit(['verify', '--etcd', etcd.endpoint, '--scope', scope], io)).toBe(1);
    // Rewriting the key also moves it to the end of store order, hence the line.
    expect(output.join('')).toContain('cluster#5 (line 6): altered: its content does not match its hash');
  });

  it('stores 10 config changes of 1 MiB each within the payload cap, and says how much etcd grew', async () => {
    const store = newStore(10_000);
    const raw = new EtcdClient({ hosts: [etcd.endpoint] });
    const prefix = `/stator-events/${scope}/`;
    // A configuration document of about 1 MiB: 1024 parameters of 1 KiB each.
    const parameters = Object.fromEntries(Array.from({ length: 1024 }, (_, i) => [`param_${i}`, 'x'.repeat(1000)]));
    try {
      const dbBefore = await etcdDbSize();
      for (let change = 0; change < 10; change++) {
        await store.append(
          'cluster',
          [
            {
              ...event('cluster', `change${change}`),
              type: 'config.changed',
              data: { config: { postgresql: { parameters } }, change },
            },
          ],
          'any',
        );
      }
      const stored = await raw.range(prefix, { prefix: true }, 10_000);
      const storedBytes = stored.kvs.reduce(
        (sum, kv) => sum + Buffer.byteLength(kv.key) + Buffer.byteLength(kv.value),
        0,
      );
      const dbGrowth = (await etcdDbSize()) - dbBefore;
      process.stdout.write(
        `event log growth after 10 config changes of 1 MiB: ${storedBytes} bytes stored under the events prefix, etcd db size +${dbGrowth} bytes\n`,
      );
      expect(storedBytes).toBeLessThan(10 * (MAX_EVENT_DATA_BYTES + 2048));
      const events = await store.read({ stream: 'cluster' });
      expect(events.map((e) => e.data)).toEqual(
        Array.from({ length: 10 }, () =>
          expect.objectContaining({ truncated: true, bytes: expect.any(Number), keys: ['change', 'config'] }),
        ),
      );
      expect(verifyChain(events)).toEqual([]);
    } finally {
      raw.close();
    }
  });

  it('stores 10 config changes of data at the cap as they are, about 16 KiB each', async () => {
    const store = newStore(10_000);
    const raw = new EtcdClient({ hosts: [etcd.endpoint] });
    const atTheCap = (change: number) => {
      const data = { change, config: '' };
      data.config = 'x'.repeat(MAX_EVENT_DATA_BYTES - JSON.stringify(data).length);
      return data;
    };
    try {
      for (let change = 0; change < 10; change++) {
        await store.append(
          'cluster',
          [{ ...event('cluster', `change${change}`), type: 'config.changed', data: atTheCap(change) }],
          'any',
        );
      }
      const stored = await raw.range(`/stator-events/${scope}/`, { prefix: true }, 10_000);
      const storedBytes = stored.kvs.reduce(
        (sum, kv) => sum + Buffer.byteLength(kv.key) + Buffer.byteLength(kv.value),
        0,
      );
      process.stdout.write(
        `event log growth after 10 config changes with data at the 16 KiB cap: ${storedBytes} bytes stored under the events prefix\n`,
      );
      expect(storedBytes).toBeLessThan(10 * (MAX_EVENT_DATA_BYTES + 2048));
      expect((await store.read({ stream: 'cluster' })).map((e) => e.data)).toEqual(
        Array.from({ length: 10 }, (_, change) => atTheCap(change)),
      );
    } finally {
      raw.close();
    }
  });

  async function etcdDbSize(): Promise<number> {
    const response = await fetch(`http://${etcd.endpoint}/v3/maintenance/status`, { method: 'POST', body: '{}' });
    return Number(((await response.json()) as { dbSize?: string }).dbSize ?? 0);
  }

  it("refuses appends while etcd's database is past the event log's share of its quota, and writes nothing", async () => {
    const raw = new EtcdClient({ hosts: [etcd.endpoint] });
    try {
      const { dbSize, dbSizeInUse } = await raw.status(2000);
      expect(dbSizeInUse).toBeGreaterThan(0);
      expect(dbSize).toBeGreaterThanOrEqual(dbSizeInUse);
      // A quota of which 40% is less than etcd holds already, then one of which 40% is far more.
      const full = new EtcdEventStore({
        hosts: [etcd.endpoint],
        scope,
        requestTimeoutMs: 2000,
        quota: { quotaBytes: 2 * dbSizeInUse, share: 0.4 },
      });
      opened.push(full);
      await expect(full.append('cluster', [event('cluster', 'refused')], 'any')).rejects.toThrow(
        /^etcd's database holds [\d.]+ MiB, over 40% of its [\d.]+ MiB quota \(event_log.etcd_quota_share, event_log.etcd_quota_bytes\)/,
      );
      expect(await newStore().read()).toEqual([]);
      const roomy = new EtcdEventStore({
        hosts: [etcd.endpoint],
        scope,
        requestTimeoutMs: 2000,
        quota: { quotaBytes: 100 * dbSizeInUse, share: 0.4 },
      });
      opened.push(roomy);
      await roomy.append('cluster', [event('cluster', 'stored')], 'any');
      expect(summary(await newStore().read())).toEqual(['cluster#1:stored']);
    } finally {
      raw.close();
    }
  });

  it('recorder: queues events while etcd is frozen and flushes them in order when it is back', async () => {
    const queueDir = tmpDir('stator-queue-');
    const store = newStore(300);
    const warnings: string[] = [];
    const recorder = new EventRecorder({
      store,
      queueDir,
      node: 'node1',
      clock: systemClock,
      logger: { warn: (message) => warnings.push(message), log: () => undefined },
    });
    try {
      await recorder.start();
      await etcd.pause();
      try {
        recorder.record(event('node/node1/postgres', 'starting'));
        recorder.record(event('cluster', 'node1'));
        recorder.record(event('node/node1/role', 'primary'));
        recorder.record(event('node/node1/postgres', 'running'));
        // A GC while the append waits must not cost it its deadline (nodejs/node#57736).
        await sleep(50);
        collectGarbage();
        await waitFor(() => warnings.some((w) => w.includes('event store unavailable')), {
          description: 'the recorder to notice the outage',
        });
        expect(recorder.pending()).toBe(4);
        await recorder.whenWritten();
        const queued = readFileSync(join(queueDir, QUEUE_FILE), 'utf8').trim().split('\n');
        expect(queued.map((line) => JSON.parse(line).to)).toEqual(['starting', 'node1', 'primary', 'running']);
      } finally {
        etcd.resume();
      }
      await waitFor(() => recorder.pending() === 0, {
        timeoutMs: 10_000,
        description: 'the queue to flush after etcd resumed',
      });
      await recorder.whenFlushed();
      expect(summary(await store.read())).toEqual([
        'node/node1/postgres#1:starting',
        'cluster#1:node1',
        'node/node1/role#1:primary',
        'node/node1/postgres#2:running',
      ]);
    } finally {
      await recorder.stop();
      removeDir(queueDir);
    }
  });
});
