import { firstValueFrom, take, toArray } from 'rxjs';
import { NewEvent, RecordedEvent } from '../../../src/events/event';
import { EventLog, rebuildProjections } from '../../../src/events/event-log';
import { MemoryEventStore } from '../../../src/events/memory-event-store';
import { historyProjection } from '../../../src/projections/history';
import { fold } from '../../../src/projections/projection';
import { pendingRestart, pendingSwitchover, scheduleProjection } from '../../../src/projections/schedule';
import { clusterProjection } from '../../../src/projections/cluster';

const NODES = ['n1', 'n2', 'n3'];

function event(type: string, node: string, fields: Partial<NewEvent> = {}, at = '2026-06-01T12:00:00.000Z'): NewEvent {
  const machine = type.split('.')[0];
  const stream = type.endsWith('.transition') || type === 'ha.verdict' ? `node/${node}/${machine}` : 'cluster';
  return { stream, type, at, node, from: null, to: null, cause: 'test', ...fields };
}

/** A seeded generator, so a failing property names a reproducible case. */
function random(seed: number) {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

function randomScenario(seed: number, length: number): NewEvent[] {
  const next = random(seed);
  const pick = <T>(items: T[]) => items[Math.floor(next() * items.length)];
  const events: NewEvent[] = [];
  for (let i = 0; i < length; i++) {
    const node = pick(NODES);
    const at = new Date(Date.UTC(2026, 5, 1, 12, 0, i)).toISOString();
    events.push(
      pick([
        () =>
          event(
            'postgres.transition',
            node,
            { from: 'stopped', to: pick(['running.idle', 'crashed', 'starting', 'stopped.idle']) },
            at,
          ),
        () =>
          event(
            'role.transition',
            node,
            { from: 'replica', to: pick(['primary', 'replica', 'demoted', 'promoted']) },
            at,
          ),
        () => event('leadership.transition', node, { from: 'follower', to: pick(['leader', 'follower']) }, at),
        () => event('leader.promoted', node, { data: { timeline: 1 + Math.floor(next() * 5) } }, at),
        () =>
          event(
            'timeline.created',
            node,
            {
              data: {
                timeline: 1 + Math.floor(next() * 5),
                lsn: Math.floor(next() * 1e8),
                reason: 'no recovery target specified',
                created_at: at,
                leader: node,
              },
            },
            at,
          ),
        () =>
          event('switchover.scheduled', node, { data: { leader: node, member: pick(NODES), scheduled_at: at } }, at),
        () =>
          event(
            pick(['switchover.cancelled', 'switchover.executed', 'switchover.skipped', 'switchover.expired']),
            node,
            {},
            at,
          ),
        () => event('restart.scheduled', node, { data: { node, schedule: at } }, at),
        () =>
          event(
            pick(['restart.cancelled', 'restart.executed', 'restart.skipped', 'restart.expired']),
            node,
            { data: { node } },
            at,
          ),
        () => event(pick(['cluster.paused', 'cluster.resumed']), node, {}, at),
      ])(),
    );
  }
  return events;
}

describe('projections are folds: the live view equals a rebuild from zero at every moment', () => {
  it.each([1, 2, 3, 4, 5, 6, 7, 8])('random scenario with seed %i', async (seed) => {
    const store = new MemoryEventStore();
    const log = new EventLog(store);
    log.start();
    await log.whenLoaded();
    const scenario = randomScenario(seed, 120);
    const stored: RecordedEvent[] = [];
    for (const next of scenario) {
      const arrived = firstValueFrom(log.feed());
      stored.push(...(await store.append(next.stream, [next], 'any')));
      await arrived;
      expect(log.projections()).toEqual(rebuildProjections(stored));
    }
    // A node started after all of this (an agent restart) rebuilds the same projections.
    const restarted = new EventLog(store);
    restarted.start();
    await restarted.whenLoaded();
    expect(restarted.projections()).toEqual(log.projections());
    log.stop();
    restarted.stop();
  });
});

describe('the history projection', () => {
  it('has one entry per timeline switch, in timeline order, whoever recorded it first', () => {
    const events = [
      event('timeline.created', 'n2', {
        data: { timeline: 2, lsn: 200, reason: 'no recovery target specified', created_at: 'b', leader: 'n3' },
      }),
      event('timeline.created', 'n1', {
        data: { timeline: 1, lsn: 100, reason: 'no recovery target specified', created_at: 'a', leader: 'n2' },
      }),
      event('timeline.created', 'n3', {
        data: { timeline: 1, lsn: 100, reason: 'no recovery target specified', created_at: 'z', leader: 'n3' },
      }),
    ].map((e, i) => ({ ...e, seq: i + 1 }));
    expect(fold(historyProjection, events)).toEqual([
      [1, 100, 'no recovery target specified', 'a', 'n2'],
      [2, 200, 'no recovery target specified', 'b', 'n3'],
    ]);
  });
});

describe('the schedule projection', () => {
  const seqd = (events: NewEvent[]) => events.map((e, i) => ({ ...e, seq: i + 1 }));

  it('gives each scheduled operation its fate', () => {
    const operations = fold(
      scheduleProjection,
      seqd([
        event(
          'switchover.scheduled',
          'n1',
          { data: { leader: 'n1', member: 'n2', scheduled_at: '2026-06-01T14:00:00+02:00' } },
          't1',
        ),
        event('switchover.cancelled', 'n1', { cause: 'DELETE /switchover' }, 't2'),
        event(
          'switchover.scheduled',
          'n1',
          { data: { leader: 'n1', scheduled_at: '2026-06-01T15:00:00+02:00' } },
          't3',
        ),
        event('switchover.executed', 'n1', { cause: 'switchover: demoting myself' }, 't4'),
        event(
          'restart.scheduled',
          'n2',
          { data: { node: 'n2', schedule: '2026-06-01T13:00:00Z', filters: { role: 'replica' } } },
          't5',
        ),
        event('restart.skipped', 'n2', { data: { node: 'n2' }, cause: 'role primary is not replica' }, 't6'),
        event('restart.scheduled', 'n3', { data: { node: 'n3', schedule: '2026-06-01T13:30:00Z' } }, 't7'),
      ]),
    );
    expect(operations.map((op) => [op.kind, op.node, op.fate, op.reason])).toEqual([
      ['switchover', 'n1', 'cancelled', 'DELETE /switchover'],
      ['switchover', 'n1', 'executed', 'switchover: demoting myself'],
      ['restart', 'n2', 'skipped', 'role primary is not replica'],
      ['restart', 'n3', 'scheduled', undefined],
    ]);
    expect(pendingSwitchover(operations)).toBeNull();
    expect(pendingRestart(operations, 'n3')).toMatchObject({ at: '2026-06-01T13:30:00Z' });
    expect(pendingRestart(operations, 'n2')).toBeNull();
  });

  it('shows a pending switchover as /cluster does', () => {
    const operations = fold(
      scheduleProjection,
      seqd([event('switchover.scheduled', 'n1', { data: { leader: 'n1', member: 'n2', scheduled_at: 'T' } })]),
    );
    expect(pendingSwitchover(operations)).toEqual({ at: 'T', from: 'n1', to: 'n2' });
  });
});

describe('the cluster projection', () => {
  it('follows leadership, roles, states and the timeline', () => {
    const events = [
      event('leadership.transition', 'n1', { from: 'follower', to: 'leader' }),
      event('role.transition', 'n1', { from: 'uninitialized', to: 'primary' }),
      event('postgres.transition', 'n1', { from: 'starting', to: 'running.idle' }),
      event('leadership.transition', 'n1', { from: 'leader', to: 'follower' }),
      event('leadership.transition', 'n2', { from: 'follower', to: 'leader' }),
      event('leader.promoted', 'n2', { data: { timeline: 2 } }),
    ].map((e, i) => ({ ...e, seq: i + 1 }));
    expect(fold(clusterProjection, events)).toEqual({
      leader: 'n2',
      timeline: 2,
      paused: false,
      members: {
        n1: {
          leadership: 'follower',
          role: 'primary',
          state: 'running',
          machines: { leadership: 'follower', role: 'primary', postgres: 'running.idle' },
        },
        n2: { leadership: 'leader', timeline: 2, machines: { leadership: 'leader' } },
      },
    });
  });

  it('keeps the leader when an old leader reports losing a lock it no longer held', () => {
    const events = [
      event('leadership.transition', 'n2', { to: 'leader' }),
      event('leadership.transition', 'n1', { to: 'follower' }),
    ].map((e, i) => ({ ...e, seq: i + 1 }));
    expect(fold(clusterProjection, events).leader).toBe('n2');
  });
});

describe('the live feed', () => {
  it('delivers each stored event once, even when it arrives again', async () => {
    const store = new MemoryEventStore();
    const log = new EventLog(store);
    log.start();
    await log.whenLoaded();
    const received = firstValueFrom(log.feed().pipe(take(2), toArray()));
    await store.append('cluster', [event('cluster.paused', 'n1')], 'any');
    await store.append('cluster', [event('cluster.resumed', 'n1')], 'any');
    expect((await received).map((e) => e.type)).toEqual(['cluster.paused', 'cluster.resumed']);
    expect(log.query({ type: 'cluster.paused' })).toHaveLength(1);
    log.stop();
  });
});
