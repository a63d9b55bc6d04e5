import { replayTransitions } from '../../src/audit/transition-replay';
import { RecordedEvent } from '../../src/events/event';
import { indexOf, syntheticLog } from './audit-fixture';

const where = (problems: ReturnType<typeof replayTransitions>['problems']) =>
  problems.map((p) => `${p.stream}#${p.seq} @${p.index}`);

describe('replayTransitions', () => {
  let log: RecordedEvent[];
  beforeAll(async () => {
    log = await syntheticLog();
  });

  it('replays a log written by the real machines without a problem, every machine ending where its log does', () => {
    const replay = replayTransitions(log);
    expect(replay.problems).toEqual([]);
    expect(replay.transitions).toBe(log.filter((e) => e.type.endsWith('.transition')).length);
    expect(replay.endings.map((e) => [e.stream, e.replayed])).toEqual(
      expect.arrayContaining([
        ['node/node1/postgres', 'running.idle'],
        ['node/node1/leadership', 'follower'],
        ['node/node2/postgres', 'running.idle'],
        ['node/node2/role', 'primary'],
      ]),
    );
    for (const ending of replay.endings) expect(ending.replayed).toBe(ending.last.to);
  });

  it('covers what the log is meant to cover: two incarnations, a failed clone, done and error events, SET_PAUSE', () => {
    const summary = log.map((e) => `${e.stream} ${e.from}->${e.to} ${e.cause}`);
    expect(summary.filter((s) => s.startsWith('node/node1/postgres null->'))).toHaveLength(2);
    expect(summary).toContain('node/node2/postgres creating_replica->stopped.idle xstate.error.actor.cloneReplica');
    expect(summary).toContain('node/node1/postgres running.idle->running.idle SET_PAUSE');
    expect(summary).toContain('node/node1/postgres running.idle->stopped.idle POSTMASTER_EXITED');
  });

  it('reports a transition the machine cannot make, once, at its position', () => {
    const events = [...log];
    const index = indexOf(events, (e) => e.stream === 'node/node2/postgres' && e.cause === 'START');
    events[index] = { ...events[index], to: 'crashed' };
    const replay = replayTransitions(events);
    expect(where(replay.problems)).toEqual([`node/node2/postgres#${events[index].seq} @${index}`]);
    expect(replay.problems[0].message).toBe(
      'illegal transition: START in stopped.idle leads to starting, recorded crashed',
    );
  });

  it('reports a transition that does not start where the previous one ended (an event missing)', () => {
    const removed = indexOf(log, (e) => e.stream === 'node/node1/postgres' && e.cause === 'INITDB');
    const events = log.filter((_, index) => index !== removed);
    const replay = replayTransitions(events);
    expect(replay.problems).toHaveLength(1);
    expect(replay.problems[0]).toMatchObject({
      stream: 'node/node1/postgres',
      seq: log[removed].seq + 1,
      index: removed,
    });
    expect(replay.problems[0].message).toMatch(
      /^illegal transition: recorded from initdb, but the machine is in stopped.idle/,
    );
  });

  it('needs SET_PAUSE: without it a postmaster exit while paused would have crashed the machine', () => {
    const pause = indexOf(log, (e) => e.cause === 'SET_PAUSE');
    const exit = indexOf(log, (e) => e.cause === 'POSTMASTER_EXITED');
    const replay = replayTransitions(log.filter((_, index) => index !== pause));
    expect(replay.problems.map((p) => [p.seq, p.message])).toEqual([
      [log[exit].seq, 'illegal transition: POSTMASTER_EXITED in running.idle leads to crashed, recorded stopped.idle'],
    ]);
  });

  it('starts a fresh machine for every xstate.init and checks its initial state', () => {
    const events = [...log];
    const index = indexOf(events, (e) => e.stream === 'node/node1/role' && e.from === null);
    events[index] = { ...events[index], to: 'primary' };
    expect(replayTransitions(events).problems.map((p) => p.message)).toEqual([
      'illegal transition: a new role machine starts in uninitialized, recorded primary',
    ]);
  });

  it('reports where a machine would end when its last transition is not what the log says', () => {
    const events = [...log];
    const last = events.length - 1 - [...events].reverse().findIndex((e) => e.stream === 'node/node2/role');
    events[last] = { ...events[last], to: 'demoted' };
    const replay = replayTransitions(events);
    expect(replay.endings.find((e) => e.stream === 'node/node2/role')).toMatchObject({
      replayed: 'primary',
      lastIndex: last,
    });
  });

  it('names a machine it does not know', () => {
    const stray: RecordedEvent = { ...log[0], stream: 'node/node1/fence', type: 'fence.transition', seq: 1 };
    expect(replayTransitions([stray]).problems.map((p) => p.message)).toEqual(['no machine named fence to replay it']);
  });
});
