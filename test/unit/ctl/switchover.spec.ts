import { ServerResponse } from 'node:http';
import { waitFor } from '../../../scripts/lib/wait-for';
import { clusterDocument, FakeNode, json, Received, statorctl, text } from './fake-node';

const at = () => new Date().toISOString();
const event = (node: string, type: string, extra: Record<string, unknown> = {}) => ({
  stream: 'cluster',
  seq: 1,
  type,
  at: at(),
  node,
  from: null,
  to: null,
  cause: 'test',
  ...extra,
});
const role = (node: string, from: string, to: string) => ({
  stream: `node/${node}/role`,
  seq: 1,
  type: 'role.transition',
  at: at(),
  node,
  from,
  to,
  cause: to.toUpperCase(),
});

describe('statorctl switchover and failover against a node API', () => {
  let node: FakeNode;
  let leader: string;

  beforeEach(async () => {
    leader = 'node1';
    node = await new FakeNode({
      'GET /cluster': (_request, response) =>
        void response
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify(clusterDocument(node.url, '/stator', leader, leader === 'node1' ? 4 : 5))),
      'POST /switchover': (request, response) => handover(request, response, 'switched over'),
      'POST /failover': (request, response) => handover(request, response, 'failed over'),
    }).start();
  });
  afterEach(() => node.stop());

  /** As a node does: the phases on the event stream, the answer once the new leader holds the lock, then the rest. */
  function handover(request: Received, response: ServerResponse, past: string): void {
    const body = request.body as { leader?: string; candidate?: string; scheduled_at?: string };
    if (body.scheduled_at) {
      response.writeHead(202, { 'content-type': 'text/plain' }).end('Switchover scheduled');
      return;
    }
    const to = body.candidate ?? 'node2';
    node.emit(event('node2', 'switchover.requested', { data: { leader: 'node1', member: body.candidate } }));
    node.emit({ ...role('node1', 'primary', 'demoted'), stream: 'node/node1/role' });
    // Stored (and streamed) in the other order than they happened, as two nodes' appends can be.
    const released = event('node1', 'leader.released');
    node.emit({ ...event(to, 'leader.acquired'), at: new Date(Date.parse(released.at) + 5).toISOString() });
    node.emit(released);
    node.emit({
      stream: 'node/node1/ha',
      seq: 9,
      type: 'ha.verdict',
      at: at(),
      node: 'node1',
      from: null,
      to: null,
      cause: 'ha.cycle',
      data: { verdict: 'noise' },
    });
    leader = to;
    response.writeHead(200, { 'content-type': 'text/plain' }).end(`Successfully ${past} to "${to}"`);
    setTimeout(() => {
      node.emit(role(to, 'replica', 'promoted'));
      node.emit(role(to, 'promoted', 'primary'));
      node.emit(event(to, 'leader.promoted', { data: { timeline: 5 } }));
      node.emit(role('node1', 'demoted', 'replica'));
    }, 50);
  }

  it('asks as patronictl does, shows the phases with elapsed time, and ends with the outcome and the topology', async () => {
    const result = await statorctl(['--api', node.url, 'switchover'], ['', 'node2', '', 'y']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.questions).toEqual([
      'Primary [node1]: ',
      "Candidate ['node2'] []: ",
      expect.stringMatching(/^When should the switchover take place \(e\.g\. \d{4}-\d\d-\d\dT\d\d:\d\d \)  \[now\]: $/),
      'Are you sure you want to switchover cluster demo, demoting current leader node1? [y/N]: ',
    ]);
    expect(node.received.find((r) => r.method === 'POST')?.body).toEqual({ leader: 'node1', candidate: 'node2' });
    const lines = result.stdout.split('\n');
    const progress = lines
      .filter((line) => /^\[ *\d+\.\d+s\] /.test(line))
      .map((line) => line.replace(/^\[ *\d+\.\d+s\] /, ''));
    // The answer and the events travel on two connections: the answer's place among them is not fixed.
    expect(progress).toContain('node answered: Successfully switched over to "node2"');
    expect(progress.filter((line) => !line.startsWith('node answered'))).toEqual([
      `POST ${node.url}/switchover {"leader":"node1","candidate":"node2"}`,
      'switchover requested: node1 -> node2',
      'node1 role primary -> demoted',
      'node1 released the leader lock',
      'node2 acquired the leader lock',
      'node2 role replica -> promoted',
      'node2 role promoted -> primary',
      'node2 promoted, timeline 5',
      'node1 role demoted -> replica',
      expect.stringMatching(/^switchover completed in \d+\.\ds: node2 is the leader, node1 follows it as a replica$/),
    ]);
    // The topology at the end once the member keys show the new timeline.
    expect(result.stdout).toMatch(/\| node2 {2}\| 127\.0\.0\.1:5433 \| Leader {2}\| running {3}\|  5 \|/);
  });

  it('aborts on anything but y, sending nothing', async () => {
    const result = await statorctl(['--api', node.url, 'switchover', '--candidate', 'node2'], ['', '', 'n']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('Error: Aborting switchover\n');
    expect(node.received.filter((r) => r.method === 'POST')).toEqual([]);
  });

  it('refuses a candidate tagged nofailover and a primary that is not the leader', async () => {
    const tagged = await statorctl(['--api', node.url, 'switchover', '--candidate', 'node3', '--force']);
    expect(tagged.stderr).toBe('Error: Member node3 does not exist in cluster demo or is tagged as nofailover\n');
    const wrong = await statorctl(['--api', node.url, 'switchover'], ['node2']);
    expect(wrong).toMatchObject({ code: 1, stderr: 'Error: Member node2 is not the leader of cluster demo\n' });
  });

  it('schedules with --scheduled and --force, asking nothing', async () => {
    const result = await statorctl([
      '--api',
      node.url,
      'switchover',
      '--force',
      '--scheduled',
      '2030-01-31T12:00+01:00',
    ]);
    expect(result.code).toBe(0);
    expect(result.questions).toEqual([]);
    expect(node.received.find((r) => r.method === 'POST')?.body).toEqual({
      leader: 'node1',
      scheduled_at: '2030-01-31T12:00+01:00',
    });
    expect(result.stdout).toMatch(/ Switchover scheduled\n$/);
  });

  it("schedules at a time typed at the prompt, asking patronictl's question", async () => {
    const result = await statorctl(['--api', node.url, 'switchover'], ['', 'node2', '2030-01-31T12:00Z', 'y']);
    expect(result.code).toBe(0);
    expect(result.questions[3]).toBe(
      'Are you sure you want to schedule switchover of cluster demo at 2030-01-31T12:00Z, demoting current leader node1? [y/N]: ',
    );
    expect(node.received.find((r) => r.method === 'POST')?.body).toEqual({
      leader: 'node1',
      candidate: 'node2',
      scheduled_at: '2030-01-31T12:00Z',
    });
  });

  it('failover needs a candidate and posts only the candidate', async () => {
    const none = await statorctl(['--api', node.url, 'failover'], ['']);
    expect(none).toMatchObject({
      code: 1,
      stderr: 'Error: Failover could be performed only to a specific candidate\n',
    });
    const result = await statorctl(['--api', node.url, 'failover'], ['node2', 'y']);
    expect(result.questions).toEqual([
      "Candidate ['node2'] []: ",
      'Are you sure you want to failover cluster demo, demoting current leader node1? [y/N]: ',
    ]);
    expect(result.code).toBe(0);
    expect(node.received.find((r) => r.method === 'POST')).toMatchObject({
      path: '/failover',
      body: { candidate: 'node2' },
    });
    expect(result.stdout).toMatch(/failover completed in \d+\.\ds: node2 is the leader/);
  });

  it('reports a refused switchover with its text and exit code 1', async () => {
    node.routes['POST /switchover'] = text('switchover is not possible: no good candidates have been found', 412);
    const result = await statorctl(['--api', node.url, 'switchover', '--force', '--candidate', 'node2']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'Error: switchover failed: switchover is not possible: no good candidates have been found\n',
    );
    expect(result.stdout).toContain('switchover failed: HTTP 412: switchover is not possible');
  });

  it('sends basic auth when given', async () => {
    await statorctl(['--api', node.url, 'list', '--auth', 'admin:s3cret']);
    expect(node.received[0].authorization).toBe(`Basic ${Buffer.from('admin:s3cret').toString('base64')}`);
  });
});

describe('statorctl list formats', () => {
  let node: FakeNode;
  beforeAll(async () => {
    node = await new FakeNode({}).start();
    const cluster = clusterDocument(node.url);
    (cluster.members[2] as Record<string, unknown>).pending_restart = true;
    node.routes['GET /cluster'] = json({ ...cluster, pause: true });
  });
  afterAll(() => node.stop());

  it("draws patronictl's table with pending restart and tags, and the maintenance note", async () => {
    const result = await statorctl(['--api', node.url, 'list']);
    expect(result.stdout.split('\n')).toEqual([
      '+ Cluster: demo ----------+---------+-----------+----+-----------+-----------------+------------------+',
      '| Member | Host           | Role    | State     | TL | Lag in MB | Pending restart | Tags             |',
      '+--------+----------------+---------+-----------+----+-----------+-----------------+------------------+',
      '| node1  | 127.0.0.1:5432 | Leader  | running   |  4 |           |                 |                  |',
      '| node2  | 127.0.0.1:5433 | Replica | streaming |  4 |         0 |                 |                  |',
      '| node3  | 127.0.0.1:5434 | Replica | streaming |  4 |         0 | *               | nofailover: true |',
      '+--------+----------------+---------+-----------+----+-----------+-----------------+------------------+',
      ' Maintenance mode: on',
      '',
    ]);
  });

  it('redraws with --watch every interval until interrupted', async () => {
    let interrupt!: () => void;
    const interrupted = new Promise<void>((resolve) => (interrupt = resolve));
    let output = '';
    const running = statorctl(
      ['--api', node.url, 'list', '--watch', '-w', '0.1'],
      [],
      {},
      interrupted,
      (text) => (output = text),
    );
    await waitFor(() => (output.match(/Cluster: demo/g) ?? []).length >= 3, { description: 'three tables' });
    interrupt();
    const result = await running;
    expect(result.code).toBe(0);
    // Each table under the time it was read.
    expect(result.stdout).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\n\+ Cluster: demo/m);
  });

  it("writes patronictl's JSON keys and YAML", async () => {
    const rows = JSON.parse((await statorctl(['--api', node.url, 'list', '--format', 'json'])).stdout) as Record<
      string,
      unknown
    >[];
    expect(rows[2]).toEqual({
      Cluster: 'demo',
      Member: 'node3',
      Host: '127.0.0.1:5434',
      Role: 'Replica',
      State: 'streaming',
      TL: 4,
      'Lag in MB': '0',
      'Pending restart': '*',
      Tags: { nofailover: true },
    });
    expect((await statorctl(['--api', node.url, 'list', '--format', 'yaml'])).stdout).toContain(
      '- Cluster: demo\n  Member: node1\n',
    );
  });
});
