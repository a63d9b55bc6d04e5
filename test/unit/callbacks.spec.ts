import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Subject } from 'rxjs';
import { callbackFor } from '../../src/callbacks/callback-policy';
import { CallbackRunner } from '../../src/callbacks/callback-runner';
import { systemClock } from '../../src/common/clock';
import { splitCommandLine } from '../../src/common/command-line';
import { NewEvent } from '../../src/events/event';
import { LocalEvent } from '../../src/events/event-recorder';
import { waitFor } from '../helpers/wait-for';
import { removeDir, tmpDir } from '../helpers/tmp';

const transition = (type: string, from: string | null, to: string, cause = 'x') => ({ type, from, to, cause });

describe('which transition fires which callback (reference 3.3, 3.4, 3.12)', () => {
  it.each([
    [transition('postgres.transition', 'starting', 'running.idle'), 'replica', { action: 'on_start', role: 'replica' }],
    [
      transition('postgres.transition', 'bootstrap_starting', 'running.idle'),
      'primary',
      { action: 'on_start', role: 'primary' },
    ],
    [transition('postgres.transition', 'starting', 'running.idle'), 'demoted', null],
    [
      transition('postgres.transition', 'restarting', 'running.idle'),
      'promoted',
      { action: 'on_restart', role: 'primary' },
    ],
    [transition('postgres.transition', 'stopping', 'stopped.idle'), 'replica', { action: 'on_stop', role: 'replica' }],
    [
      transition(
        'postgres.transition',
        'running.reconfiguring',
        'running.idle',
        'xstate.done.actor.reconfigurePostgres',
      ),
      'replica',
      { action: 'on_reload', role: 'replica' },
    ],
    [
      transition(
        'postgres.transition',
        'running.reconfiguring',
        'running.idle',
        'xstate.error.actor.reconfigurePostgres',
      ),
      'replica',
      null,
    ],
    [transition('postgres.transition', 'running.idle', 'crashed'), 'primary', null],
    [transition('role.transition', 'replica', 'promoted'), 'replica', { action: 'on_role_change', role: 'primary' }],
    [transition('role.transition', 'promoted', 'primary'), 'promoted', null],
    [transition('role.transition', 'demoted', 'replica'), 'demoted', { action: 'on_role_change', role: 'replica' }],
    [
      transition('role.transition', 'replica', 'standby_leader'),
      'replica',
      { action: 'on_role_change', role: 'standby_leader' },
    ],
    [
      transition('role.transition', 'primary', 'demoted', 'GAVE_UP_AFTER_FAILED_START'),
      'primary',
      { action: 'on_role_change', role: 'demoted' },
    ],
    [transition('role.transition', 'primary', 'demoted', 'DEMOTED'), 'primary', null],
    [transition('role.transition', 'uninitialized', 'primary'), 'uninitialized', null],
    [transition('role.transition', 'uninitialized', 'replica'), 'uninitialized', null],
  ])('%j with role %s → %j', (fact, role, expected) => {
    expect(callbackFor(fact, role)).toEqual(expected);
  });
});

describe('command lines split as a shell would, run without one', () => {
  it.each([
    ['/usr/bin/vip.sh', ['/usr/bin/vip.sh']],
    ['python3 "/opt/my callbacks/cb.py" --flag', ['python3', '/opt/my callbacks/cb.py', '--flag']],
    ["sh -c 'echo $1 >> /tmp/x' cb", ['sh', '-c', 'echo $1 >> /tmp/x', 'cb']],
    ['a\\ b "c\\"d"', ['a b', 'c"d']],
    ['unbalanced "quote', null],
  ])('%s', (line, words) => {
    expect(splitCommandLine(line)).toEqual(words);
  });
});

describe('CallbackRunner', () => {
  let dir: string;
  let recorded: NewEvent[];
  let feed: Subject<LocalEvent>;
  const finished = () => recorded.filter((event) => event.type === 'callback.finished').map((event) => event.data);

  beforeEach(() => {
    dir = tmpDir('stator-callbacks-');
    recorded = [];
    feed = new Subject();
  });
  afterEach(() => removeDir(dir));

  function script(name: string, body: string): string {
    const path = join(dir, name);
    writeFileSync(path, `#!/bin/sh\n${body}\n`);
    chmodSync(path, 0o755);
    return path;
  }

  function runner(commands: Record<string, string>, timeoutMs = 5000): CallbackRunner {
    const created = new CallbackRunner({
      commands,
      scope: 'batman',
      node: 'n1',
      events: { record: (event) => recorded.push(event) },
      clock: systemClock,
      log: { info: () => undefined, warning: () => undefined },
      timeoutMs,
    });
    created.follow(feed);
    return created;
  }

  const event = (type: string, from: string, to: string): LocalEvent => ({
    stream: 'node/n1/x',
    type,
    at: '',
    node: 'n1',
    from,
    to,
    cause: 'x',
  });

  it('calls the command with `<action> <role> <scope>` appended, and records how it ended', async () => {
    const out = join(dir, 'calls');
    const cb = script('cb.sh', `echo "$@" >> ${out}`);
    runner({ on_role_change: `${cb} --vip 10.0.0.5`, on_start: cb });
    feed.next(event('role.transition', 'replica', 'promoted'));
    await waitFor(() => finished().length === 1, { description: 'the callback to finish' });
    expect(readFileSync(out, 'utf8')).toBe('--vip 10.0.0.5 on_role_change primary batman\n');
    expect(finished()).toEqual([
      {
        action: 'on_role_change',
        role: 'primary',
        outcome: 'exited',
        exitCode: 0,
        signal: null,
        durationMs: expect.any(Number),
      },
    ]);
    expect(recorded.map((e) => [e.stream, e.type])).toEqual([
      ['node/n1/callbacks', 'callback.started'],
      ['node/n1/callbacks', 'callback.finished'],
    ]);
  });

  it('kills a callback past its deadline, with its children, and records it', async () => {
    const hang = script('hang.sh', 'sleep 30 & sleep 30');
    runner({ on_start: hang }, 300);
    feed.next(event('postgres.transition', 'starting', 'running.idle'));
    await waitFor(() => finished().length === 1, { description: 'the hung callback to be killed' });
    expect(finished()[0]).toMatchObject({ action: 'on_start', outcome: 'timed out', signal: 'SIGKILL' });
    expect(finished()[0]!.durationMs as number).toBeLessThan(2000);
  });

  it('runs one callback at a time: a newer one kills the one still running', async () => {
    const slow = script('slow.sh', 'sleep 30');
    const out = join(dir, 'calls');
    const fast = script('fast.sh', `echo "$@" >> ${out}`);
    runner({ on_stop: slow, on_start: fast });
    feed.next(event('postgres.transition', 'stopping', 'stopped'));
    feed.next(event('postgres.transition', 'starting', 'running.idle'));
    await waitFor(() => finished().length === 2, { description: 'both callbacks to end' });
    expect(finished().map((data) => [data!.action, data!.outcome])).toEqual(
      expect.arrayContaining([
        ['on_stop', 'superseded'],
        ['on_start', 'exited'],
      ]),
    );
  });

  it('records a command that cannot start', async () => {
    runner({ on_start: join(dir, 'missing.sh') });
    feed.next(event('postgres.transition', 'starting', 'running.idle'));
    await waitFor(() => finished().length === 1, { description: 'the failed start to be recorded' });
    expect(finished()[0]).toMatchObject({
      action: 'on_start',
      outcome: 'failed to start',
      error: expect.stringContaining('ENOENT'),
    });
  });
});
