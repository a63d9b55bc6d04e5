import { ManualClock } from '../../src/common/clock';
import { NewEvent, RecordedEvent } from '../../src/events/event';
import { EventLog, rebuildProjections } from '../../src/events/event-log';
import { EventRetention, RetentionPolicy } from '../../src/events/event-retention';
import { eventHash, verifyChain } from '../../src/events/hash-chain';
import { MemoryEventStore } from '../../src/events/memory-event-store';
import { loadAuditLog } from '../../src/audit/audit-source';
import { exportLines } from '../../src/audit/export';
import { verifyLog } from '../../src/audit/verify';
import { removeDir, tmpDir } from '../helpers/tmp';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { syntheticLog } from './audit-fixture';

const DAY = 24 * 60 * 60_000;

/** The synthetic audit log (real machines' transitions, cluster facts) in a store of our own. */
async function storeWithSyntheticLog(): Promise<{ store: MemoryEventStore; original: RecordedEvent[] }> {
  const store = new MemoryEventStore();
  for (const { seq: _seq, prev: _prev, hash: _hash, ...event } of await syntheticLog())
    await store.append(event.stream, [event as NewEvent], 'any');
  return { store, original: await store.read() };
}

const retention = (store: MemoryEventStore, clock: ManualClock, policy: Partial<RetentionPolicy>) =>
  new EventRetention({ store, clock, policy });
const streamsOf = (events: RecordedEvent[]) => [...new Set(events.map((event) => event.stream))];
const failed = (report: Awaited<ReturnType<typeof verifyLog>>) =>
  report.checks.filter((check) => check.status === 'failed');

describe('event log retention', () => {
  it('keeps at most maxEventsPerStream per stream, behind a checkpoint of the last removed event', async () => {
    const { store, original } = await storeWithSyntheticLog();
    const outcome = await retention(store, new ManualClock(Date.parse('2026-01-01T00:00:00Z')), {
      maxEventsPerStream: 3,
    }).runOnce();

    const kept = await store.read();
    for (const stream of streamsOf(original))
      expect(kept.filter((event) => event.stream === stream).length).toBeLessThanOrEqual(3);
    expect(Object.values(outcome.removed).reduce((a, b) => a + b, 0)).toBe(original.length - kept.length);
    const checkpoint = (await store.readCheckpoint())!;
    for (const [stream, { seq, hash }] of Object.entries(checkpoint.streams)) {
      expect(original.find((event) => event.stream === stream && event.seq === seq)?.hash).toBe(hash);
      const firstKept = kept.find((event) => event.stream === stream);
      if (firstKept) expect(firstKept).toMatchObject({ seq: seq + 1, prev: hash });
    }
  });

  it('removes the events older than maxAgeMs, a prefix in store order, and nothing younger', async () => {
    const { store, original } = await storeWithSyntheticLog();
    const middle = original[Math.floor(original.length / 2)];
    const clock = new ManualClock(Date.parse(middle.at) + 30 * DAY);

    await retention(store, clock, { maxAgeMs: 30 * DAY }).runOnce();

    const kept = await store.read();
    expect(kept.every((event) => Date.parse(event.at) >= Date.parse(middle.at))).toBe(true);
    expect(kept.length).toBeLessThan(original.length);
    expect(kept).toEqual(original.filter((event) => Date.parse(event.at) >= Date.parse(middle.at)));
    expect(await retention(store, clock, { maxAgeMs: 30 * DAY }).runOnce()).toEqual({ removed: {} });
  });

  it('cuts the oldest events in store order until the rest of the log fits in maxBytes, and only those', async () => {
    const { store, original } = await storeWithSyntheticLog();
    const bytes = (events: RecordedEvent[]) =>
      events.reduce((sum, event) => sum + Buffer.byteLength(JSON.stringify(event)), 0);
    const budget = Math.floor(bytes(original) / 3);
    const clock = new ManualClock(Date.parse(original[0].at));

    await retention(store, clock, { maxBytes: budget }).runOnce();

    const kept = await store.read();
    expect(bytes(kept)).toBeLessThanOrEqual(budget);
    expect(kept).toEqual(original.slice(original.length - kept.length));
    // One more event would not have fitted: the cut is the shortest prefix that makes the rest fit.
    expect(bytes(original.slice(original.length - kept.length - 1))).toBeGreaterThan(budget);
    expect(await retention(store, clock, { maxBytes: budget }).runOnce()).toEqual({ removed: {} });
  });

  it('leaves the projections as a rebuild of the whole log gives them, for an agent started after the cut', async () => {
    const { store, original } = await storeWithSyntheticLog();
    await retention(store, new ManualClock(), { maxEventsPerStream: 1 }).runOnce();
    const log = new EventLog(store);
    log.start();
    try {
      await log.whenLoaded();
      expect(log.projections()).toEqual(rebuildProjections(original));
      expect(log.projections().history).toHaveLength(1);
    } finally {
      log.stop();
    }
  });

  it('reads the newest events as far as maxBytes reaches and the rest only as far as the cut, in bounded batches', async () => {
    const store = new MemoryEventStore();
    const start = Date.parse('2026-01-01T00:00:00Z');
    for (let i = 0; i < 6000; i++) {
      const stream = ['cluster', 'node/node1/ha', 'node/node2/ha'][i % 3];
      await store.append(
        stream,
        [
          {
            stream,
            type: 'ha.verdict',
            at: new Date(start + i * 1000).toISOString(),
            node: 'node1',
            from: null,
            to: null,
            cause: 'test',
            data: { verdict: `v${i}` },
          },
        ],
        'any',
      );
    }
    const reads: number[] = [];
    const readRanges = store.readRanges.bind(store);
    store.readRanges = async (ranges) => {
      const events = await readRanges(ranges);
      reads.push(events.length);
      return events;
    };
    const eventBytes = Buffer.byteLength(JSON.stringify((await store.read())[5999]));
    // The first 100 events are more than 30 days old; 1,000 events' worth of bytes is far less than the log.
    const outcome = await retention(store, new ManualClock(start + 100_000 + 30 * DAY), {
      maxAgeMs: 30 * DAY,
      maxBytes: 1000 * eventBytes,
    }).runOnce();
    const removed = Object.values(outcome.removed).reduce((a, b) => a + b, 0);

    expect(removed).toBeGreaterThanOrEqual(4990);
    expect(removed).toBeLessThanOrEqual(5010);
    // The newest-first pass stops in its first round; the cut pass reads the removed events and at most one round more.
    expect(reads.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(2000 + removed + 2000);
    expect(Math.max(...reads)).toBeLessThanOrEqual(2000);

    // Once the log fits, a run reads it newest first (at most maxBytes) and removes nothing.
    reads.length = 0;
    expect(
      await retention(store, new ManualClock(start + 100_000 + 30 * DAY), {
        maxAgeMs: 30 * DAY,
        maxBytes: 1000 * eventBytes,
      }).runOnce(),
    ).toEqual({ removed: {} });
    expect(reads.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(1010 + 2000);
  });

  it('cuts once when two nodes run at the same time: the other finds the checkpoint changed', async () => {
    const { store } = await storeWithSyntheticLog();
    const outcomes = await Promise.all(
      [1, 2].map(() => retention(store, new ManualClock(), { maxEventsPerStream: 2 }).runOnce()),
    );
    expect(outcomes.filter((outcome) => outcome.skipped === 'another node cut the log meanwhile')).toHaveLength(1);
    expect(verifyChain(await store.read(), (await store.readCheckpoint())!.streams)).toEqual([]);
  });

  describe('stator audit verify on the retained log', () => {
    it('passes, and says the chains start at the checkpoint', async () => {
      const { store, original } = await storeWithSyntheticLog();
      const clock = new ManualClock(Date.parse(original[Math.floor(original.length / 2)].at) + 30 * DAY);
      await retention(store, clock, { maxAgeMs: 30 * DAY }).runOnce();
      const checkpoint = await store.readCheckpoint();

      const report = await verifyLog(await store.read(), { checkpoint });

      expect(failed(report)).toEqual([]);
      expect(report.checks[0].summary).toMatch(
        /every link intact; \d+ streams? starts? at the retention checkpoint of /,
      );
      expect(verifyChain(await store.read())).not.toEqual([]); // without the checkpoint, the start looks removed
    });

    it('still finds an altered event, a forged first link and a removed first event', async () => {
      const { store } = await storeWithSyntheticLog();
      await retention(store, new ManualClock(), { maxEventsPerStream: 3 }).runOnce();
      const checkpoint = (await store.readCheckpoint())!;
      const kept = await store.read();
      const [stream] = Object.keys(checkpoint.streams).filter(
        (name) => kept.filter((event) => event.stream === name).length >= 2,
      );
      const first = kept.findIndex((event) => event.stream === stream);

      const altered = kept.map((event, i) => (i === first ? { ...event, cause: 'tampered' } : event));
      expect(verifyChain(altered, checkpoint.streams)).toEqual([
        expect.objectContaining({ kind: 'altered', stream, index: first }),
      ]);

      const forged = { ...kept[first], prev: 'f'.repeat(64) };
      const relinked = kept.map((event, i) =>
        i === first ? { ...forged, hash: eventHash(forged, forged.prev) } : event,
      );
      expect(verifyChain(relinked, checkpoint.streams)).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            kind: 'broken-link',
            stream,
            message: expect.stringContaining(`the checkpoint's #${checkpoint.streams[stream].seq}`),
          }),
        ]),
      );

      const withoutFirst = kept.filter((_, i) => i !== first);
      expect(verifyChain(withoutFirst, checkpoint.streams)).toEqual([
        expect.objectContaining({ kind: 'removed', stream }),
      ]);
    });

    it('passes on an export of the retained log, which carries the checkpoint', async () => {
      const { store } = await storeWithSyntheticLog();
      await retention(store, new ManualClock(), { maxEventsPerStream: 4 }).runOnce();
      const dir = tmpDir('stator-retained-');
      try {
        const file = join(dir, 'events.jsonl');
        writeFileSync(file, exportLines(await store.read(), {}, await store.readCheckpoint()));
        const log = await loadAuditLog({ kind: 'file', path: file }, {});
        expect(log.checkpoint).toEqual(await store.readCheckpoint());
        expect(log.lines[0]).toBe(2);
        expect(failed(await verifyLog(log.events, { checkpoint: log.checkpoint }))).toEqual([]);
      } finally {
        removeDir(dir);
      }
    });
  });
});
