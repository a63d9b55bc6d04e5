import { createActor } from 'xstate';
import { RecordedEvent } from '../../src/events/event';
import { transitionRecorder } from '../../src/events/transition-recorder';
import {
  HA_MEMORY_EVENT_TYPES,
  haMemoryMachine,
  HaMemory,
  recordedMemoryEvent,
  replayableMemory,
} from '../../src/ha/ha-memory.machine';
import { compareWithReplay, firstDifference, MemorySample } from '../../scripts/lib/chaos/memory-replay';

/** A node's memory machine recording into `log`, at the times `clock.now` gives. */
function recordedNode(name: string, log: RecordedEvent[], clock: { now: () => number }) {
  return createActor(haMemoryMachine, {
    inspect: transitionRecorder(
      'memory',
      name,
      { record: (e) => log.push({ ...e, seq: log.length + 1 } as RecordedEvent) },
      clock,
      { contextEvents: HA_MEMORY_EVENT_TYPES, recordedEvent: recordedMemoryEvent },
    ),
  }).start();
}

describe("the chaos round's memory check", () => {
  const start = Date.parse('2026-11-28T08:00:00Z');
  const iso = (ms: number) => new Date(start + ms).toISOString();

  it('counts the instants per node and round, and finds nothing when the log rebuilds what was served', () => {
    const log: RecordedEvent[] = [];
    let now = start;
    const node = recordedNode('node1', log, { now: () => now });
    const served = (ms: number, round: number): MemorySample => ({
      node: 'node1',
      round,
      at: iso(ms),
      memory: replayableMemory(node.getSnapshot().context),
    });
    const samples = [served(500, 1)];
    now = start + 1000;
    node.send({ type: 'SETTINGS_CONFIGURED', digest: 'aaaaaaaaaaaa' });
    samples.push(served(1500, 1));
    now = start + 2000;
    node.send({ type: 'READ_POOL_WITHDRAWN', at: 42 });
    samples.push(served(2500, 2), served(4500, 2));

    const rounds = compareWithReplay(log, samples, 2);
    expect(rounds).toEqual([
      { instants: { node1: 2 }, mismatches: [] },
      { instants: { node1: 2 }, mismatches: [] },
    ]);
  });

  it('reports a served memory the log does not rebuild (an event missing from the log), naming the key', () => {
    const log: RecordedEvent[] = [];
    let now = start;
    const node = recordedNode('node1', log, { now: () => now });
    now = start + 1000;
    node.send({ type: 'LEAVING_STARTED' });
    const served = replayableMemory(node.getSnapshot().context);
    log.pop(); // the recorder lost the last transition (an agent killed before its flush)

    const [round] = compareWithReplay(log, [{ node: 'node1', round: 1, at: iso(1500), memory: served }], 1);
    expect(round.mismatches).toEqual([
      { node: 'node1', at: iso(1500), detail: 'leaving: replayed false, served true' },
    ]);
  });

  it('reports an instant before any transition of the node as not rebuilt', () => {
    const [round] = compareWithReplay([], [{ node: 'node2', round: 1, at: iso(0), memory: {} }], 1);
    expect(round.mismatches).toEqual([
      { node: 'node2', at: iso(0), detail: 'no memory transition in the log by then' },
    ]);
  });

  it('compares values whatever the order of their keys', () => {
    const memory = { dataDir: { state: 'initialized', timeline: 2 } } as unknown as HaMemory;
    expect(firstDifference(memory, { dataDir: { timeline: 2, state: 'initialized' } })).toBeNull();
    expect(firstDifference(memory, { dataDir: { timeline: 3, state: 'initialized' } })).toBe(
      'dataDir: replayed {"state":"initialized","timeline":2}, served {"state":"initialized","timeline":3}',
    );
  });
});
