import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AnyStateMachine, createActor } from 'xstate';
import { ManualClock } from '../../src/common/clock';
import { NewEvent, RecordedEvent } from '../../src/events/event';
import { MemoryEventStore } from '../../src/events/memory-event-store';
import { transitionRecorder } from '../../src/events/transition-recorder';
import { leadershipMachine } from '../../src/ha/leadership.machine';
import { roleMachine } from '../../src/ha/role.machine';
import { postgresMachine } from '../../src/postgresql/postgres.machine';
import { fakePostgresActors } from '../helpers/fake-postgres-actors';

/**
 * A realistic event log for the audit tests: the real machines driven through a bootstrap, a
 * pause with a postmaster exit, an agent restart (new incarnations), a clone that fails once, a
 * promotion, plus cluster facts (timeline, scheduled and cancelled switchover). Invoked actors are
 * fakes; transitions go through the real transitionRecorder and every event through a
 * MemoryEventStore, so the result is chained exactly as a store would chain it.
 */
export async function syntheticLog(): Promise<RecordedEvent[]> {
  const clock = new ManualClock();
  const recorded: NewEvent[] = [];
  const sink = { record: (event: NewEvent) => recorded.push(event) };
  const tick = async () => {
    clock.advance(1000);
    // Fake invoked actors resolve on the microtask queue: let them finish.
    await new Promise((resolve) => setImmediate(resolve));
  };
  const fact = (type: string, node: string, cause: string, data: Record<string, unknown>) =>
    sink.record({
      stream: 'cluster',
      type,
      at: new Date(clock.now()).toISOString(),
      node,
      from: null,
      to: null,
      cause,
      data,
    });

  const start = (name: 'postgres' | 'role' | 'leadership', node: string, machine: AnyStateMachine) => {
    const actor = createActor(machine, { inspect: transitionRecorder(name, node, sink, clock) });
    actor.start();
    return actor;
  };
  const postgresWith = (failing: string[] = []) => postgresMachine.provide({ actors: fakePostgresActors(failing) });
  const settings = { role: 'primary' as const, parameters: {} };
  const startRequest = { settings, timeoutMs: 1000 };

  // node1 bootstraps and leads.
  let pg1 = start('postgres', 'node1', postgresWith());
  const role1 = start('role', 'node1', roleMachine);
  const lead1 = start('leadership', 'node1', leadershipMachine);
  await tick();
  lead1.send({ type: 'LOCK_ACQUIRED', reason: 'initialize' });
  fact('leader.acquired', 'node1', 'initialize', { leader: 'node1' });
  role1.send({ type: 'BOOTSTRAP_STARTED' });
  pg1.send({ type: 'INITDB' });
  await tick();
  pg1.send({ type: 'START', start: startRequest });
  await tick();
  // Paused, a postmaster exit stops rather than crashes: the replay needs SET_PAUSE to agree.
  pg1.send({ type: 'SET_PAUSE', paused: true });
  await tick();
  fact('cluster.paused', 'node1', 'PATCH /config', {});
  pg1.send({ type: 'POSTMASTER_EXITED', code: 0, signal: null, fenced: false });
  await tick();
  pg1.send({ type: 'SET_PAUSE', paused: false });
  fact('cluster.resumed', 'node1', 'PATCH /config', {});
  await tick();

  // node1's agent restarts: fresh machines, the postmaster is adopted.
  pg1.stop();
  pg1 = start('postgres', 'node1', postgresWith());
  await tick();
  pg1.send({ type: 'ADOPT', timeoutMs: 1000 });
  await tick();

  // node2 clones, fails once, clones again, starts, and is later promoted.
  const pg2 = start('postgres', 'node2', postgresWith(['cloneReplica']));
  const role2 = start('role', 'node2', roleMachine);
  const lead2 = start('leadership', 'node2', leadershipMachine);
  await tick();
  const source = { name: 'node1', host: '127.0.0.1', port: 5432 };
  pg2.send({ type: 'CLONE', source });
  await tick();
  pg2.send({ type: 'CLONE', source });
  await tick();
  pg2.send({ type: 'START', start: { ...startRequest, settings: { ...settings, role: 'replica' as const } } });
  await tick();
  role2.send({ type: 'DETECTED_REPLICA' });
  await tick();

  fact('switchover.scheduled', 'node1', 'POST /switchover', {
    leader: 'node1',
    member: 'node2',
    scheduled_at: '2026-01-01T02:00:00+00:00',
  });
  await tick();
  fact('switchover.cancelled', 'node1', 'DELETE /switchover', {
    leader: 'node1',
    member: 'node2',
    scheduled_at: '2026-01-01T02:00:00+00:00',
  });
  await tick();

  lead1.send({ type: 'LOCK_RELEASED', reason: 'switchover' });
  role1.send({ type: 'DEMOTED' });
  await tick();
  lead2.send({ type: 'LOCK_ACQUIRED', reason: 'switchover' });
  role2.send({ type: 'PROMOTE_STARTED' });
  pg2.send({ type: 'PROMOTE', timeoutMs: 1000 });
  await tick();
  role2.send({ type: 'PROMOTE_COMPLETED' });
  fact('timeline.created', 'node2', 'pg_wal/00000002.history', {
    timeline: 1,
    lsn: 50331808,
    reason: 'no recovery target specified',
    created_at: new Date(clock.now()).toISOString(),
    leader: 'node2',
  });
  await tick();

  const store = new MemoryEventStore();
  for (const event of recorded) await store.append(event.stream, [event], 'any');
  return store.read();
}

/** The events as an export file `dir/name`; returns its path. */
export function writeExport(dir: string, name: string, events: RecordedEvent[]): string {
  const path = join(dir, name);
  writeFileSync(path, events.map((event) => `${JSON.stringify(event)}\n`).join(''));
  return path;
}

/** Index of the first event matching `predicate`; throws when there is none (a fixture change). */
export function indexOf(events: RecordedEvent[], predicate: (event: RecordedEvent) => boolean): number {
  const index = events.findIndex(predicate);
  if (index < 0) throw new Error('no such event in the synthetic log');
  return index;
}
