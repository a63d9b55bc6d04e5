import { createActor } from 'xstate';
import { replayedMachineAt } from '../../../src/audit/transition-replay';
import { EffectiveDynamicConfig, StatorConfig } from '../../../src/config/config.types';
import { RecordedEvent } from '../../../src/events/event';
import { transitionRecorder } from '../../../src/events/transition-recorder';
import { changedKeys, configDigest } from '../../../src/ha/config-digest';
import {
  changesMemory,
  HA_MEMORY_EVENT_TYPES,
  HaMemory,
  HaMemoryEvent,
  haMemoryMachine,
  INITIAL_HA_MEMORY,
  recordedMemoryEvent,
  replayableMemory,
} from '../../../src/ha/ha-memory.machine';

const dataDir = {
  state: 'initialized' as const,
  clusterState: 'shut down',
  checkpointLsn: 123,
  timeline: 2,
  standbySignal: false,
};
const config = {
  name: 'node1',
  tags: { nofailover: true },
  postgresql: { parameters: { work_mem: '4MB' } },
} as unknown as StatorConfig;
const dynamic = { ttl: 30, loop_wait: 10 } as unknown as EffectiveDynamicConfig;

const table: [HaMemoryEvent, Partial<HaMemory>][] = [
  [{ type: 'BOOTSTRAP_STARTED' }, { bootstrapping: true }],
  [{ type: 'BOOTSTRAP_ENDED' }, { bootstrapping: false }],
  [{ type: 'LEAVING_STARTED' }, { leaving: true }],
  [{ type: 'LEAVING_SYNC_STARTED' }, { leavingSync: true }],
  [{ type: 'LEAVING_SYNC_ENDED' }, { leavingSync: false }],
  [{ type: 'CHECKPOINT_AFTER_PROMOTE_PENDING' }, { checkpointAfterPromotePending: true }],
  [{ type: 'CHECKPOINT_AFTER_PROMOTE_DONE' }, { checkpointAfterPromotePending: false }],
  [{ type: 'READ_POOL_WITHDRAWN', at: 4200 }, { readPoolWithdrawnAt: 4200 }],
  [{ type: 'READ_POOL_RESTORED' }, { readPoolWithdrawnAt: null }],
  [{ type: 'WATCHDOG_FAILURE_CHANGED', failure: 'no watchdog device' }, { watchdogFailure: 'no watchdog device' }],
  [
    { type: 'FAILSAFE_MEMBERS_KNOWN', members: { node1: 'http://a/patroni' } },
    { knownFailsafeMembers: { node1: 'http://a/patroni' } },
  ],
  [{ type: 'DATA_DIR_INSPECTED', dataDir }, { dataDir }],
  [
    { type: 'CONFIG_RELOADED', config, digest: 'abc', changedKeys: ['tags'], tags: { nofailover: true } },
    { config, configDigest: 'abc', tags: { nofailover: true } },
  ],
  [
    { type: 'DYNAMIC_CONFIG_APPLIED', dynamic, digest: 'def', changedKeys: ['ttl'] },
    { dynamic, dynamicDigest: 'def' },
  ],
  [{ type: 'SETTINGS_CONFIGURED', digest: '0a1b2c3d4e5f' }, { settingsDigest: '0a1b2c3d4e5f' }],
];

describe('the memory machine', () => {
  it.each(table)('%j changes the memory to %j, and changesMemory says it would', (event, expected) => {
    const before =
      event.type.endsWith('_ENDED') || event.type.endsWith('_DONE') || event.type === 'READ_POOL_RESTORED'
        ? afterAllOf(
            table.slice(
              0,
              table.findIndex(([e]) => e === event),
            ),
          )
        : INITIAL_HA_MEMORY;
    expect(changesMemory(before, event)).toBe(true);
    const actor = createActor(haMemoryMachine, {
      snapshot: haMemoryMachine.resolveState({ value: 'remembering', context: before }),
    }).start();
    actor.send(event);
    expect(actor.getSnapshot().context).toEqual({ ...before, ...expected });
    expect(changesMemory(actor.getSnapshot().context, event)).toBe(false);
  });

  it('records each event as a memory.transition, with the configurations left out of the log', () => {
    const log: Record<string, unknown>[] = [];
    const actor = createActor(haMemoryMachine, {
      inspect: transitionRecorder(
        'memory',
        'node1',
        { record: (e) => log.push(e as Record<string, unknown>) },
        { now: () => 0 },
        { contextEvents: HA_MEMORY_EVENT_TYPES, recordedEvent: recordedMemoryEvent },
      ),
    }).start();
    for (const [event] of table) actor.send(event);
    expect(log.map((e) => e.cause)).toEqual(['xstate.init', ...table.map(([e]) => e.type)]);
    expect(log.every((e) => e.type === 'memory.transition' && e.stream === 'node/node1/memory')).toBe(true);
    const reload = log.find((e) => e.cause === 'CONFIG_RELOADED')!.data as { event: Record<string, unknown> };
    expect(reload.event).toEqual({
      type: 'CONFIG_RELOADED',
      digest: 'abc',
      changedKeys: ['tags'],
      tags: { nofailover: true },
    });
    const applied = log.find((e) => e.cause === 'DYNAMIC_CONFIG_APPLIED')!.data as { event: Record<string, unknown> };
    expect(applied.event).toEqual({ type: 'DYNAMIC_CONFIG_APPLIED', digest: 'def', changedKeys: ['ttl'] });
  });

  it('is rebuilt by a replay of its log at any instant, but for the configuration bodies (their digests stand for them)', () => {
    const log: RecordedEvent[] = [];
    let now = Date.parse('2026-11-28T08:00:00Z');
    const actor = createActor(haMemoryMachine, {
      inspect: transitionRecorder(
        'memory',
        'node1',
        { record: (e) => log.push({ ...e, seq: log.length + 1 } as RecordedEvent) },
        { now: () => now },
        { contextEvents: HA_MEMORY_EVENT_TYPES, recordedEvent: recordedMemoryEvent },
      ),
    }).start();
    const served: [string, HaMemory][] = [];
    for (const [event] of table) {
      now += 1000;
      actor.send(event);
      served.push([new Date(now).toISOString(), actor.getSnapshot().context]);
    }
    for (const [at, memory] of served) {
      const replayed = replayedMachineAt(log, 'node/node1/memory', at);
      expect(replayableMemory(replayed!.context as HaMemory)).toEqual(replayableMemory(memory));
    }
  });
});

describe('config digests', () => {
  it('gives the same digest whatever the key order, another when a value changes', () => {
    expect(configDigest({ a: 1, b: { c: 2, d: 3 } })).toBe(configDigest({ b: { d: 3, c: 2 }, a: 1 }));
    expect(configDigest({ a: 1 })).not.toBe(configDigest({ a: 2 }));
    expect(configDigest({ a: 1 })).toMatch(/^[0-9a-f]{12}$/);
  });

  it('names the changed keys two levels deep', () => {
    expect(
      changedKeys(
        { ttl: 30, postgresql: { parameters: { a: 1 }, use_pg_rewind: true } },
        { ttl: 30, postgresql: { parameters: { a: 2 }, use_pg_rewind: true }, tags: {} },
      ),
    ).toEqual(['postgresql.parameters', 'tags']);
    expect(changedKeys({ ttl: 30 }, { ttl: 30 })).toEqual([]);
  });
});

function afterAllOf(rows: typeof table): HaMemory {
  const actor = createActor(haMemoryMachine).start();
  for (const [event] of rows) actor.send(event);
  return actor.getSnapshot().context;
}
