import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { systemClock } from '../../src/common/clock';
import { NewEvent } from '../../src/events/event';
import { boundEvent, MAX_EVENT_CAUSE_CHARS, MAX_EVENT_DATA_BYTES } from '../../src/events/event-bounds';
import { EventRecorder, QUEUE_FILE } from '../../src/events/event-recorder';
import { verifyChain } from '../../src/events/hash-chain';
import { MemoryEventStore } from '../../src/events/memory-event-store';
import { removeDir, tmpDir } from '../helpers/tmp';

const configChange = (data: Record<string, unknown>, cause = 'PATCH /config'): NewEvent => ({
  stream: 'cluster',
  type: 'config.changed',
  at: '2026-11-24T12:00:00.000Z',
  node: 'node1',
  from: null,
  to: null,
  cause,
  data,
});
/** A configuration document of about 1 MiB. */
const hugeConfig = () => ({
  postgresql: { parameters: Object.fromEntries(Array.from({ length: 1024 }, (_, i) => [`p${i}`, 'x'.repeat(1000)])) },
  ttl: 30,
});

describe('event payload cap', () => {
  it('keeps data within 16 KiB as it is', () => {
    const data = { value: 'é'.repeat(4000) }; // 8 KB of UTF-8
    expect(boundEvent(configChange(data)).data).toBe(data);
  });

  it('replaces larger data with a summary naming its size and first keys', () => {
    const data = hugeConfig();
    const bytes = Buffer.byteLength(JSON.stringify(data));
    expect(bytes).toBeGreaterThan(1_000_000);
    expect(boundEvent(configChange(data)).data).toEqual({
      truncated: true,
      bytes,
      keys: ['postgresql', 'ttl'],
      keyCount: 2,
    });
  });

  it('counts bytes, not characters, and names at most 20 keys of 64 characters', () => {
    const wide = Object.fromEntries(
      Array.from({ length: 30 }, (_, i) => [`${String(i).padStart(2, '0')}${'k'.repeat(100)}`, '€'.repeat(200)]),
    );
    const summary = boundEvent(configChange(wide)).data as { keys: string[]; keyCount: number; bytes: number };
    expect(summary.bytes).toBe(Buffer.byteLength(JSON.stringify(wide)));
    expect(summary.keyCount).toBe(30);
    expect(summary.keys).toHaveLength(20);
    expect(summary.keys[0]).toBe(`00${'k'.repeat(62)}`);
  });

  it('shortens a cause longer than 1 KiB', () => {
    const cause = boundEvent(configChange({}, 'y'.repeat(5000))).cause;
    expect(cause).toHaveLength(MAX_EVENT_CAUSE_CHARS);
    expect(cause.endsWith('…')).toBe(true);
  });

  it('is applied by the store, and the hash chain covers what is stored', async () => {
    const store = new MemoryEventStore();
    const [stored] = await store.append('cluster', [configChange(hugeConfig())], 'any');
    expect(stored.data).toMatchObject({ truncated: true });
    expect(JSON.stringify(stored).length).toBeLessThan(MAX_EVENT_DATA_BYTES);
    expect(verifyChain(await store.read())).toEqual([]);
  });

  it('is applied by the recorder before the queue file, and the event is still stored', async () => {
    const queueDir = tmpDir('stator-cap-');
    const store = new MemoryEventStore();
    const recorder = new EventRecorder({
      store,
      queueDir,
      node: 'node1',
      clock: systemClock,
      logger: { warn: () => undefined, log: () => undefined },
    });
    try {
      recorder.record(configChange(hugeConfig()));
      await recorder.whenWritten();
      expect(readFileSync(join(queueDir, QUEUE_FILE), 'utf8').length).toBeLessThan(1024);
      await recorder.start();
      await recorder.whenFlushed();
      const [stored] = await store.read();
      expect(stored).toMatchObject({ type: 'config.changed', data: { truncated: true, keys: ['postgresql', 'ttl'] } });
    } finally {
      await recorder.stop();
      removeDir(queueDir);
    }
  });
});
