import { createActor, fromPromise, waitFor } from 'xstate';
import { ManualClock } from '../../../src/common/clock';
import { RecordedEvent } from '../../../src/events/event';
import { topLevelState, transitionRecorder } from '../../../src/events/transition-recorder';
import { postgresMachine } from '../../../src/postgresql/postgres.machine';
import { PostgresEvent, StartRequest, StopRequest } from '../../../src/postgresql/postgres-machine-types';
import { fakePostgresActors } from '../../helpers/fake-postgres-actors';
import { POSTGRES_STATE_NAMES, POSTGRES_STATES } from '../../../src/postgresql/postgres-states';

const settings = { role: 'primary' as const, parameters: {} };
const start = { settings, timeoutMs: 1000 };
const exited = { type: 'POSTMASTER_EXITED', code: null, signal: 'SIGKILL', fenced: false } as const;

/** A path of commands to every state; `failing` names the actors that fail on the way. */
const pathTo: Record<string, { events: PostgresEvent[]; failing?: string[] }> = {
  stopped: { events: [] },
  initdb: { events: [{ type: 'INITDB' }] },
  initdb_failed: { events: [{ type: 'INITDB' }], failing: ['runInitdb'] },
  custom_bootstrap: { events: [{ type: 'CUSTOM_BOOTSTRAP', method: { command: 'true', options: {} }, start }] },
  custom_bootstrap_failed: {
    events: [{ type: 'CUSTOM_BOOTSTRAP', method: { command: 'false', options: {} }, start }],
    failing: ['runCustomBootstrap'],
  },
  bootstrap_starting: { events: [{ type: 'CUSTOM_BOOTSTRAP', method: { command: 'true', options: {} }, start }] },
  creating_replica: { events: [{ type: 'CLONE', source: { name: 'n2', host: '127.0.0.1', port: 5433 } }] },
  starting: { events: [{ type: 'START', start }] },
  running: { events: [{ type: 'START', start }] },
  start_failed: { events: [{ type: 'START', start }], failing: ['startPostgres'] },
  restarting: {
    events: [
      { type: 'START', start },
      { type: 'RESTART', start, mode: 'fast' },
    ],
  },
  restart_failed: {
    events: [
      { type: 'START', start },
      { type: 'RESTART', start, mode: 'fast' },
    ],
    failing: ['restartPostgres'],
  },
  stopping: {
    events: [
      { type: 'START', start },
      { type: 'STOP', mode: 'fast', timeoutMs: 1000 },
    ],
  },
  stop_failed: {
    events: [
      { type: 'START', start },
      { type: 'STOP', mode: 'fast', timeoutMs: 1000 },
    ],
    failing: ['stopPostgres'],
  },
  crashed: { events: [{ type: 'START', start }, exited] },
};

function run(failing: string[] = []) {
  const recorded: RecordedEvent[] = [];
  const sink = { record: (event: Omit<RecordedEvent, 'seq'>) => recorded.push({ ...event, seq: recorded.length + 1 }) };
  const actor = createActor(postgresMachine.provide({ actors: fakePostgresActors(failing) }), {
    inspect: transitionRecorder('postgres', 'n1', sink, new ManualClock()),
  });
  actor.start();
  return { actor, recorded };
}

async function settle(actor: ReturnType<typeof run>['actor'], event: PostgresEvent) {
  actor.send(event);
  // Invoked fakes resolve on the microtask queue; let them finish before the next command.
  await new Promise((resolve) => setImmediate(resolve));
}

describe('postgres machine', () => {
  it('declares exactly the 15 states of the spec with their fixed codes', () => {
    expect(Object.keys(postgresMachine.root.states).sort()).toEqual([...POSTGRES_STATE_NAMES].sort());
    expect(POSTGRES_STATE_NAMES.map((name) => POSTGRES_STATES[name].code)).toEqual([...Array(15).keys()]);
  });

  it.each(POSTGRES_STATE_NAMES)('reaches %s, recording every transition in order', async (target) => {
    const path = pathTo[target];
    const { actor, recorded } = run(path.failing);
    const seen: string[] = [topLevelState(actor.getSnapshot().value)];
    actor.subscribe((s) => seen.push(topLevelState(s.value)));
    for (const event of path.events) {
      actor.send(event);
      if (seen.includes(target)) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    await waitFor(actor, () => seen.includes(target), { timeout: 1000 });

    // The log chains: each event starts where the previous one ended, from the initial state on.
    expect(recorded[0]).toMatchObject({ stream: 'node/n1/postgres', seq: 1, from: null, to: 'stopped.idle' });
    for (let i = 1; i < recorded.length; i++) expect(recorded[i].from).toBe(recorded[i - 1].to);
    expect(recorded.map((e) => topLevelState(e.to!.split('.')[0]))).toContain(target);
    actor.stop();
  });

  it('a postmaster death while running is a crash, but a stop while paused', async () => {
    const { actor } = run();
    await settle(actor, { type: 'START', start });
    await settle(actor, exited);
    expect(actor.getSnapshot().value).toBe('crashed');

    const paused = run();
    await settle(paused.actor, { type: 'SET_PAUSE', paused: true });
    await settle(paused.actor, { type: 'START', start });
    await settle(paused.actor, exited);
    expect(topLevelState(paused.actor.getSnapshot().value)).toBe('stopped');
  });

  it('an exit reported late for an earlier postmaster neither crashes the running one nor fails the next start', async () => {
    // Seen in the N = 20 storm: a fence killed its postmaster at the lock's deadline and the exit reached the agent
    // after it had begun the next start; that start was failed while its new server went on running unseen.
    let finishStart: (pid: number) => void = () => undefined;
    let starts = 0;
    const startPostgres = fromPromise<{ pid: number }, StartRequest>(() =>
      ++starts === 1
        ? Promise.resolve({ pid: 4242 })
        : new Promise((resolve) => (finishStart = (pid) => resolve({ pid }))),
    );
    const actor = createActor(postgresMachine.provide({ actors: { ...fakePostgresActors(), startPostgres } }));
    actor.start();
    await settle(actor, { type: 'START', start });
    await settle(actor, { ...exited, pid: 4100 });
    expect(actor.getSnapshot().value).toEqual({ running: 'idle' });

    await settle(actor, { type: 'STOP', mode: 'immediate', timeoutMs: 1000 });
    await settle(actor, { type: 'START', start });
    await settle(actor, { ...exited, pid: 4242 });
    expect(actor.getSnapshot().value).toBe('starting');
    finishStart(4300);
    await waitFor(actor, (snapshot) => topLevelState(snapshot.value) === 'running', { timeout: 1000 });

    await settle(actor, { ...exited, pid: 4300 });
    expect(actor.getSnapshot().value).toBe('crashed');
  });

  it('a STOP after a failed start stops what may still run there, the log showing the stop', async () => {
    const { actor, recorded } = run(['startPostgres']);
    await settle(actor, { type: 'START', start });
    expect(actor.getSnapshot().value).toBe('start_failed');
    await settle(actor, { type: 'STOP', mode: 'immediate', timeoutMs: 1000 });
    expect(recorded.map((e) => e.to)).toEqual(['stopped.idle', 'starting', 'start_failed', 'stopping', 'stopped.idle']);
  });

  it('records the cause of a crash with the exit details for replay', async () => {
    const { actor, recorded } = run();
    await settle(actor, { type: 'START', start });
    await settle(actor, { ...exited, fenced: true });
    const crash = recorded[recorded.length - 1];
    expect(crash).toMatchObject({ from: 'running.idle', to: 'crashed', cause: 'POSTMASTER_EXITED' });
    expect(crash.data?.event).toEqual({ type: 'POSTMASTER_EXITED', code: null, signal: 'SIGKILL', fenced: true });
    expect(actor.getSnapshot().context.lastError).toContain('fence');
  });

  it('promotes and rewinds inside running and stopped, keeping the reported state', async () => {
    const { actor, recorded } = run();
    await settle(actor, { type: 'START', start });
    await settle(actor, { type: 'PROMOTE', timeoutMs: 1000 });
    expect(actor.getSnapshot().context.lastOutcome).toBe('promoted');
    await settle(actor, { type: 'STOP', mode: 'fast', timeoutMs: 1000 });
    await settle(actor, { type: 'REWIND', source: { name: 'n2', host: '127.0.0.1', port: 5433 }, crashRecovery: true });
    expect(actor.getSnapshot().context.lastOutcome).toBe('rewound');
    expect(recorded.map((e) => e.to)).toEqual([
      'stopped.idle',
      'starting',
      'running.idle',
      'running.promoting',
      'running.idle',
      'stopping',
      'stopped.idle',
      'stopped.rewinding',
      'stopped.idle',
    ]);
  });

  it('records each step of a stop that passed its deadline, so the log shows how the postmaster went', async () => {
    const recorded: RecordedEvent[] = [];
    const sink = {
      record: (event: Omit<RecordedEvent, 'seq'>) => recorded.push({ ...event, seq: recorded.length + 1 }),
    };
    const escalatingStop = fromPromise<void, StopRequest>(async ({ input }) => {
      input.onEscalation?.('immediate');
      await new Promise((resolve) => setImmediate(resolve));
      input.onEscalation?.('sigkill');
    });
    const actor = createActor(
      postgresMachine.provide({ actors: { ...fakePostgresActors([]), stopPostgres: escalatingStop } }),
      {
        inspect: transitionRecorder('postgres', 'n1', sink, new ManualClock()),
      },
    ).start();
    await settle(actor, { type: 'START', start });
    actor.send({ type: 'STOP', mode: 'fast', timeoutMs: 5000 });
    await waitFor(actor, (snapshot) => topLevelState(snapshot.value) === 'stopped', { timeout: 1000 });
    const stopping = recorded.filter((event) => event.from === 'stopping' || event.to === 'stopping');
    expect(stopping.map((event) => [event.cause, event.data?.event])).toEqual([
      ['STOP', { type: 'STOP', mode: 'fast', timeoutMs: 5000 }],
      ['STOP_ESCALATED', { type: 'STOP_ESCALATED', step: 'immediate' }],
      ['STOP_ESCALATED', { type: 'STOP_ESCALATED', step: 'sigkill' }],
      [expect.stringContaining('done'), expect.anything()],
    ]);
    expect(actor.getSnapshot().context.lastStopEscalation).toBe('sigkill');
  });

  it('ignores commands that make no sense in the current state', async () => {
    const { actor, recorded } = run();
    await settle(actor, { type: 'PROMOTE', timeoutMs: 1000 });
    await settle(actor, { type: 'RECONFIGURE', settings });
    expect(actor.getSnapshot().value).toEqual({ stopped: 'idle' });
    expect(recorded).toHaveLength(1);
  });
});
