import { appendFileSync, existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Observable } from 'rxjs';
import { systemClock } from '../../src/common/clock';
import { NewEvent, RecordedEvent } from '../../src/events/event';
import { EventRecorder, LocalEvent, QUEUE_FILE } from '../../src/events/event-recorder';
import { EventFilter, EventStore, ExpectedVersion, StreamRange } from '../../src/events/event-store.port';
import { LogCheckpoint } from '../../src/events/log-checkpoint';
import { MemoryEventStore } from '../../src/events/memory-event-store';
import { removeDir, tmpDir } from '../helpers/tmp';
import { waitFor } from '../helpers/wait-for';

/** A MemoryEventStore that can be "down", or can apply an append and then lose the answer. */
class UnreliableStore implements EventStore {
  down = false;
  loseNextAppendAnswer = false;
  /** Appends applied: one etcd revision each in the etcd store. */
  appliedAppends = 0;
  constructor(readonly inner = new MemoryEventStore()) {}

  async append(stream: string, events: NewEvent[], expected: ExpectedVersion): Promise<RecordedEvent[]> {
    this.failIfDown();
    const stored = await this.inner.append(stream, events, expected);
    if (this.loseNextAppendAnswer) {
      this.loseNextAppendAnswer = false;
      throw new Error('connection reset after the append was applied');
    }
    return stored;
  }
  async appendStreams(events: NewEvent[], expected: ReadonlyMap<string, ExpectedVersion>): Promise<RecordedEvent[]> {
    this.failIfDown();
    const stored = await this.inner.appendStreams(events, expected);
    this.appliedAppends++;
    if (this.loseNextAppendAnswer) {
      this.loseNextAppendAnswer = false;
      throw new Error('connection reset after the append was applied');
    }
    return stored;
  }
  async read(filter?: EventFilter): Promise<RecordedEvent[]> {
    this.failIfDown();
    return this.inner.read(filter);
  }
  async lastSeq(stream: string): Promise<number> {
    this.failIfDown();
    return this.inner.lastSeq(stream);
  }
  async readRanges(ranges: StreamRange[]): Promise<RecordedEvent[]> {
    this.failIfDown();
    return this.inner.readRanges(ranges);
  }
  async streamHeads(): Promise<{ stream: string; seq: number }[]> {
    this.failIfDown();
    return this.inner.streamHeads();
  }
  async readCheckpoint(): Promise<LogCheckpoint | null> {
    this.failIfDown();
    return this.inner.readCheckpoint();
  }
  async writeCheckpoint(next: LogCheckpoint, expected: LogCheckpoint | null): Promise<void> {
    this.failIfDown();
    return this.inner.writeCheckpoint(next, expected);
  }
  subscribe(): Observable<RecordedEvent> {
    return this.inner.subscribe();
  }
  async close(): Promise<void> {}
  private failIfDown(): void {
    if (this.down) throw new Error('event store unreachable');
  }
}

const NODE = 'node1';
let at = Date.parse('2026-01-01T00:00:00Z');
const event = (machine: string, to: string, node = NODE): NewEvent => ({
  stream: machine === 'cluster' ? 'cluster' : `node/${node}/${machine}`,
  type: machine === 'cluster' ? 'leader.acquired' : `${machine}.transition`,
  at: new Date(at++).toISOString(),
  node,
  from: null,
  to,
  cause: 'test',
});
const summary = (events: Pick<RecordedEvent, 'stream' | 'seq' | 'to'>[]) =>
  events.map((e) => `${e.stream}#${e.seq}:${e.to}`);

describe(EventRecorder.name, () => {
  let queueDir: string;
  let store: UnreliableStore;
  let warnings: string[];
  const recorders: EventRecorder[] = [];
  const newRecorder = (node = NODE) => {
    const recorder = new EventRecorder({
      store,
      queueDir,
      node,
      clock: systemClock,
      logger: { warn: (message) => warnings.push(message), log: () => undefined },
    });
    recorders.push(recorder);
    return recorder;
  };
  /** The events the queue files hold as still to store, once every recorder's background writes are done. */
  const queueFileLines = async () => {
    await Promise.all(recorders.map((recorder) => recorder.whenWritten()));
    const storedLines = existsSync(join(queueDir, 'events-queue.stored'))
      ? Number(readFileSync(join(queueDir, 'events-queue.stored'), 'utf8'))
      : 0;
    return readFileSync(join(queueDir, QUEUE_FILE), 'utf8')
      .split('\n')
      .filter(Boolean)
      .slice(storedLines)
      .map((line) => JSON.parse(line) as LocalEvent);
  };

  beforeEach(() => {
    queueDir = tmpDir('stator-queue-');
    store = new UnreliableStore();
    warnings = [];
  });
  afterEach(async () => {
    await Promise.all(recorders.splice(0).map((recorder) => recorder.stop()));
    removeDir(queueDir);
  });

  it('assigns seqs per own stream at record time and stores events in recording order', async () => {
    const recorder = newRecorder();
    await recorder.start();
    expect(recorder.record(event('postgres', 'starting'))).toMatchObject({ stream: 'node/node1/postgres', seq: 1 });
    expect(recorder.record(event('role', 'replica'))).toMatchObject({ stream: 'node/node1/role', seq: 1 });
    expect(recorder.record(event('postgres', 'running'))).toMatchObject({ seq: 2 });
    expect(recorder.record(event('cluster', 'node1'))).toBeUndefined();
    await recorder.whenFlushed();
    expect(summary(await store.read())).toEqual([
      'node/node1/postgres#1:starting',
      'node/node1/role#1:replica',
      'node/node1/postgres#2:running',
      'cluster#1:node1',
    ]);
    expect(recorder.pending()).toBe(0);
    expect(await queueFileLines()).toEqual([]);
  });

  it('emits every recorded event on recorded$ at once, before it reaches the store', () => {
    const recorder = newRecorder();
    const seen: LocalEvent[] = [];
    recorder.recorded$.subscribe((recorded) => seen.push(recorded));
    recorder.record(event('postgres', 'starting'));
    recorder.record(event('cluster', 'node1'));
    expect(seen.map((e) => [e.stream, e.seq])).toEqual([
      ['node/node1/postgres', 1],
      ['cluster', undefined],
    ]);
  });

  it('keeps events in the queue file while the store is down and flushes them in order when it returns', async () => {
    store.down = true;
    const recorder = newRecorder();
    await recorder.start();
    recorder.record(event('postgres', 'starting'));
    recorder.record(event('cluster', 'node1'));
    recorder.record(event('postgres', 'running'));
    expect((await queueFileLines()).map((e) => e.to)).toEqual(['starting', 'node1', 'running']);
    expect(recorder.pending()).toBe(3);
    // What the self-diagnosis reads: the depth, the oldest queued event's time, since when the store refuses.
    const oldestAt = Date.parse((await queueFileLines())[0].at);
    await waitFor(() => recorder.queueState().storeDownSince !== null, { description: 'the store seen down' });
    expect(recorder.queueState()).toEqual({ depth: 3, oldestAt, storeDownSince: expect.any(Number) });

    store.down = false;
    await recorder.whenFlushed();
    expect(recorder.queueState()).toEqual({ depth: 0, oldestAt: null, storeDownSince: null });
    expect(summary(await store.read())).toEqual([
      'node/node1/postgres#1:starting',
      'cluster#1:node1',
      'node/node1/postgres#2:running',
    ]);
    expect(await queueFileLines()).toEqual([]);
  });

  it('loses nothing across an agent restart while the store is down, and never reuses a seq', async () => {
    store.down = true;
    const first = newRecorder();
    await first.start();
    first.record(event('postgres', 'starting'));
    first.record(event('cluster', 'node1'));
    first.record(event('postgres', 'running'));
    await first.stop();

    const second = newRecorder();
    await second.start();
    expect(second.pending()).toBe(3);
    expect(second.record(event('postgres', 'stopping'))).toMatchObject({ seq: 3 });
    store.down = false;
    await second.whenFlushed();
    expect(summary(await store.read())).toEqual([
      'node/node1/postgres#1:starting',
      'cluster#1:node1',
      'node/node1/postgres#2:running',
      'node/node1/postgres#3:stopping',
    ]);
  });

  it('continues the seq of a flushed stream after a restart even when the store is unreachable at start', async () => {
    const first = newRecorder();
    await first.start();
    first.record(event('postgres', 'starting'));
    first.record(event('postgres', 'running'));
    await first.whenFlushed();
    await first.stop();

    store.down = true;
    const second = newRecorder();
    await second.start();
    expect(second.record(event('postgres', 'stopping'))).toMatchObject({ seq: 3 });
  });

  it('does not store an event twice when an append was applied but its answer lost', async () => {
    const recorder = newRecorder();
    await recorder.start();
    store.loseNextAppendAnswer = true;
    recorder.record(event('postgres', 'starting'));
    await recorder.whenFlushed();
    store.loseNextAppendAnswer = true;
    recorder.record(event('cluster', 'node1'));
    await recorder.whenFlushed();
    expect(summary(await store.read())).toEqual(['node/node1/postgres#1:starting', 'cluster#1:node1']);
    expect(warnings.filter((w) => w.includes('re-based'))).toEqual([]);
  });

  it('stores what one transition records on several streams in one append, in recording order', async () => {
    const recorder = newRecorder();
    await recorder.start();
    recorder.record(event('role', 'demoting'));
    recorder.record(event('postgres', 'stopping'));
    recorder.record(event('cluster', 'node1'));
    recorder.record(event('role', 'demoted'));
    recorder.record(event('postgres', 'stopped'));
    await recorder.whenFlushed();
    expect(store.appliedAppends).toBe(1);
    expect(summary(await store.read())).toEqual([
      'node/node1/role#1:demoting',
      'node/node1/postgres#1:stopping',
      'cluster#1:node1',
      'node/node1/role#2:demoted',
      'node/node1/postgres#2:stopped',
    ]);
  });

  it('does not store a cluster event twice when the lost answer was that of an append of several streams', async () => {
    await store.inner.append('cluster', [event('cluster', 'node2', 'node2')], 'any');
    const recorder = newRecorder();
    await recorder.start();
    store.loseNextAppendAnswer = true;
    recorder.record(event('postgres', 'starting'));
    recorder.record(event('cluster', 'node1'));
    recorder.record(event('role', 'replica'));
    await recorder.whenFlushed();
    expect(summary(await store.read())).toEqual([
      'cluster#1:node2',
      'node/node1/postgres#1:starting',
      'cluster#2:node1',
      'node/node1/role#1:replica',
    ]);
  });

  it('re-bases queued seqs after events an earlier incarnation stored, and logs it', async () => {
    // An earlier incarnation (queue dir since wiped) stored two events on the same stream.
    await store.inner.append('node/node1/postgres', [event('postgres', 'old-1'), event('postgres', 'old-2')], 0);
    store.down = true;
    const recorder = newRecorder();
    await recorder.start();
    expect(recorder.record(event('postgres', 'starting'))).toMatchObject({ seq: 1 });
    recorder.record(event('postgres', 'running'));

    store.down = false;
    await recorder.whenFlushed();
    expect(summary(await store.read({ stream: 'node/node1/postgres' }))).toEqual([
      'node/node1/postgres#1:old-1',
      'node/node1/postgres#2:old-2',
      'node/node1/postgres#3:starting',
      'node/node1/postgres#4:running',
    ]);
    expect(warnings.some((w) => w.includes('re-based 2 queued events to 3..4'))).toBe(true);
    expect(recorder.record(event('postgres', 'stopping'))).toMatchObject({ seq: 5 });
  });

  it('appends cluster events after those of other nodes (seq assigned by the store)', async () => {
    await store.inner.append('cluster', [event('cluster', 'node2', 'node2')], 'any');
    const recorder = newRecorder();
    await recorder.start();
    recorder.record(event('cluster', 'node1'));
    await recorder.whenFlushed();
    expect(summary(await store.read({ stream: 'cluster' }))).toEqual(['cluster#1:node2', 'cluster#2:node1']);
  });

  it('skips a torn last line left by a crash in the middle of a write', async () => {
    store.down = true;
    const first = newRecorder();
    first.record(event('postgres', 'starting'));
    await first.stop();
    appendFileSync(join(queueDir, QUEUE_FILE), '{"stream":"node/node1/postgres","ty');

    store.down = false;
    const second = newRecorder();
    await second.start();
    await second.whenFlushed();
    expect(summary(await store.read())).toEqual(['node/node1/postgres#1:starting']);
    expect(warnings.some((w) => w.includes('unreadable line'))).toBe(true);
  });

  it('records a burst without waiting for the disk, and a restart finds every event in order', async () => {
    store.down = true;
    const first = newRecorder();
    await first.start();
    for (let i = 0; i < 2000; i++) first.record(event('postgres', `state-${i}`));
    // Nothing was written yet: record() returned before any write, and the group is written in the background.
    await first.whenWritten();
    await first.stop();
    const second = newRecorder();
    expect(second.pending()).toBe(0);
    await second.start();
    expect(second.pending()).toBe(2000);
    store.down = false;
    await second.whenFlushed();
    expect((await store.read()).map((stored) => stored.to)).toEqual(
      Array.from({ length: 2000 }, (_, i) => `state-${i}`),
    );
  });

  it('flushes an outage backlog without rewriting the queue file per batch, and empties it at the end', async () => {
    store.down = true;
    const recorder = newRecorder();
    await recorder.start();
    for (let i = 0; i < 1000; i++) recorder.record(event(i % 2 ? 'postgres' : 'cluster', `e${i}`));
    await recorder.whenWritten();
    const inode = statSync(join(queueDir, QUEUE_FILE)).ino;
    store.down = false;
    await recorder.whenFlushed();
    await recorder.whenWritten();
    // The same file (a rewrite would be a new one, renamed into place) cut to nothing once every line was stored.
    expect(statSync(join(queueDir, QUEUE_FILE)).ino).toBe(inode);
    expect(statSync(join(queueDir, QUEUE_FILE)).size).toBe(0);
    expect(await store.read()).toHaveLength(1000);
  });

  it('keeps a small stored queue file for the next events, and a restart continues its seqs from its stored lines', async () => {
    const first = newRecorder();
    await first.start();
    for (const to of ['a', 'b', 'c']) first.record(event('postgres', to));
    await first.whenFlushed();
    await first.whenWritten();
    // Stored, and not emptied yet: the file is under its bound, and it is what still holds seq 3 on disk.
    expect(readFileSync(join(queueDir, QUEUE_FILE), 'utf8').split('\n').filter(Boolean)).toHaveLength(3);
    expect(await queueFileLines()).toEqual([]);
    expect(existsSync(join(queueDir, 'events-seq.json'))).toBe(false);
    await first.stop();

    store.down = true;
    const second = newRecorder();
    await second.start();
    expect(second.pending()).toBe(0);
    expect(second.record(event('postgres', 'd'))).toMatchObject({ seq: 4 });
  });

  it('a restart after a crash between a stored batch and its count re-sends nothing twice', async () => {
    store.down = true;
    const first = newRecorder();
    await first.start();
    for (const to of ['a', 'b', 'c']) first.record(event('postgres', to));
    await first.whenWritten();
    await first.stop();
    // The store took the first two, but the crash came before the count of stored lines was written.
    store.down = false;
    const queued = readFileSync(join(queueDir, QUEUE_FILE), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as LocalEvent);
    await store.append(
      'node/node1/postgres',
      queued.slice(0, 2).map(({ seq: _seq, ...rest }) => rest),
      0,
    );
    const second = newRecorder();
    await second.start();
    await second.whenFlushed();
    expect(summary(await store.read())).toEqual([
      'node/node1/postgres#1:a',
      'node/node1/postgres#2:b',
      'node/node1/postgres#3:c',
    ]);
  });

  it('rejects whenFlushed when stopped with events still queued', async () => {
    store.down = true;
    const recorder = newRecorder();
    await recorder.start();
    recorder.record(event('postgres', 'starting'));
    const flushed = recorder.whenFlushed();
    await waitFor(() => warnings.some((w) => w.includes('unavailable')), { description: 'the outage to be noticed' });
    await recorder.stop();
    await expect(flushed).rejects.toThrow('stopped with 1 events queued');
    expect((await queueFileLines()).map((e) => e.to)).toEqual(['starting']);
  });
});
