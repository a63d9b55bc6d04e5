import { parseSseFrame } from '../../../src/ctl/client';
import { describeEvent } from '../../../src/ctl/progress';
import { waitFor } from '../../../scripts/lib/wait-for';
import { RecordedEvent } from '../../../src/events/event';
import { FakeNode, json, statorctl } from './fake-node';

const event = (over: Partial<RecordedEvent>): RecordedEvent => ({
  stream: 'cluster',
  seq: 1,
  type: 'x',
  at: '2026-11-25T10:00:00.000Z',
  node: 'node1',
  from: null,
  to: null,
  cause: 'c',
  ...over,
});

describe('progress phases', () => {
  it.each<[Partial<RecordedEvent>, string | null]>([
    [
      { type: 'task.transition', node: 'node1', data: { event: { type: 'TASK_STARTED', task: 'switchover' } } },
      'node1 leader demoting (switchover)',
    ],
    [
      {
        type: 'task.transition',
        node: 'node2',
        data: { event: { type: 'TASK_ENDED', task: 'promote', error: 'timeout' } },
      },
      'node2 promote failed: timeout',
    ],
    [{ type: 'task.transition', node: 'node2', data: { event: { type: 'TASK_STARTED', task: 'start' } } }, null],
    [{ type: 'postgres.transition', node: 'node1', from: 'running.idle', to: 'stopping' }, 'node1 PostgreSQL stopping'],
    [{ type: 'postgres.transition', node: 'node1', from: 'running.idle', to: 'running.reconfiguring' }, null],
    [{ type: 'role.transition', node: 'node2', from: 'replica', to: 'replica' }, null],
    [{ type: 'leader.promoted', node: 'node2', data: { timeline: 3 } }, 'node2 promoted, timeline 3'],
    [
      { type: 'switchover.requested', data: { leader: 'node1', site: 'dc2' } },
      'switchover requested: node1 -> a member of site dc2',
    ],
    [{ type: 'ha.verdict', data: { verdict: 'no action' } }, null],
  ])('%j → %j', (over, line) => {
    expect(describeEvent(event(over))).toBe(line);
  });

  it('reads SSE frames, skipping comments', () => {
    expect(parseSseFrame('event: role.transition\ndata: {"a":1}')).toEqual({
      event: 'role.transition',
      data: '{"a":1}',
    });
    expect(parseSseFrame(': heartbeat')).toBeNull();
  });
});

describe('statorctl events', () => {
  let node: FakeNode;
  beforeAll(async () => {
    node = await new FakeNode({
      'GET /cluster': json({ scope: 'demo', members: [] }),
      'GET /events': json([
        event({ type: 'leader.acquired', cause: 'won the leader race' }),
        event({
          type: 'ha.verdict',
          stream: 'node/node1/ha',
          data: { verdict: 'no action. I am (node1), the leader with the lock' },
        }),
        // Stored by an older version, with an offset: shown in the same format as the others.
        event({ type: 'switchover.requested', at: '2026-11-25T11:00:01.354+01:00', cause: 'older' }),
      ]),
    }).start();
  });
  afterAll(() => node.stop());

  it('passes the filters and shows a page as a table', async () => {
    const result = await statorctl([
      '--api',
      node.url,
      'events',
      '--type',
      'leader.acquired',
      '--node',
      'node1',
      '--limit',
      '5',
    ]);
    expect(result.code).toBe(0);
    expect(node.received.at(-1)?.path).toBe('/events?node=node1&type=leader.acquired&limit=5');
    expect(result.stdout).toMatch(
      /\| 2026-11-25T10:00:00\.000Z \| node1 \| cluster +\| leader\.acquired +\| won the leader race /,
    );
    expect(result.stdout).toContain('no action. I am (node1), the leader with the lock');
    expect(result.stdout).toMatch(
      /\| 2026-11-25T10:00:01\.354Z \| node1 \| cluster +\| switchover\.requested \| older /,
    );
    expect(result.stdout).not.toContain('+01:00');
  });

  it('follows the stream until interrupted, one event per line (JSON lines with --format json)', async () => {
    let interrupt!: () => void;
    const interrupted = new Promise<void>((resolve) => (interrupt = resolve));
    let output = '';
    const running = statorctl(
      ['--api', node.url, 'events', '--follow', '--format', 'json', '--stream', 'cluster'],
      [],
      {},
      interrupted,
      (text) => (output = text),
    );
    await waitFor(() => node.streamCount() === 1, { description: 'the event stream open' });
    expect(node.received.at(-1)?.path).toBe('/events/stream?stream=cluster');
    node.emit(event({ type: 'cluster.paused', seq: 7 }));
    node.emit(event({ type: 'cluster.resumed', seq: 8 }));
    await waitFor(() => output.split('\n').length === 3, { description: 'two lines' });
    interrupt();
    const result = await running;
    expect(result.code).toBe(0);
    expect(
      result.stdout
        .trim()
        .split('\n')
        .map((line) => (JSON.parse(line) as RecordedEvent).type),
    ).toEqual(['cluster.paused', 'cluster.resumed']);
  });
});
