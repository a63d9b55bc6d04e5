import { roleChangeState } from '../../../src/ctl/commands/cluster-role';
import { ClusterDocument } from '../../../src/ctl/context';
import { clusterDocument, FakeNode, json, statorctl } from './fake-node';

/** A cluster whose leader turns standby leader (or primary) once PATCH /config has been received. */
describe('statorctl demote-cluster and promote-cluster against a node API', () => {
  let node: FakeNode;
  let leaderRole: 'leader' | 'standby_leader';
  let patchStatus: number;
  let statusReads: number;

  const cluster = () => {
    const document = clusterDocument(node.url);
    document.members[0].role = leaderRole;
    return document;
  };

  async function start(initialRole: 'leader' | 'standby_leader', afterPatch: 'leader' | 'standby_leader') {
    leaderRole = initialRole;
    patchStatus = 200;
    statusReads = 0;
    node = await new FakeNode({
      'GET /cluster': (_request, response) =>
        void response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(cluster())),
      // The leader's server: it leaves recovery one reading after /cluster shows the new role.
      'GET /stator': (_request, response) => {
        const role = statusReads++ === 0 ? 'in between' : leaderRole === 'leader' ? 'primary' : 'standby_leader';
        return json({ role, state: 'running' })(_request, response);
      },
      'PATCH /config': (request, response) => {
        if (patchStatus !== 200)
          return json({ message: 'standby_cluster.host: must be a host name or address' }, patchStatus)(
            request,
            response,
          );
        leaderRole = afterPatch;
        return json({})(request, response);
      },
    }).start();
  }
  afterEach(() => node?.stop());

  it('demote-cluster asks as patronictl, sends standby_cluster with the options given, and waits for the standby leader', async () => {
    await start('leader', 'standby_leader');
    const result = await statorctl(
      [
        '--api',
        node.url,
        'demote-cluster',
        'demo',
        '--host',
        'dc1.example.net',
        '--port',
        '5433',
        '--primary-slot-name',
        'dc2',
        '--restore-command',
        'cp /a/%f %p',
      ],
      ['y'],
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.questions).toEqual(['Are you sure you want to demote demo cluster? [y/N]: ']);
    expect(node.received.find((r) => r.method === 'PATCH')?.body).toEqual({
      standby_cluster: {
        host: 'dc1.example.net',
        port: 5433,
        primary_slot_name: 'dc2',
        restore_command: 'cp /a/%f %p',
      },
    });
    expect(result.stdout).toMatch(/^Current cluster topology\n\+ Cluster: demo/);
    expect(result.stdout).toMatch(
      /\n\d{4}-\d\d-\d\d \d\d:\d\d:\d\d cluster is successfully demoted\n[\s\S]*Standby Leader/,
    );
  });

  it('demote-cluster with --restore-command alone (an archive-only standby cluster) sends it without a host, as patronictl', async () => {
    await start('leader', 'standby_leader');
    const result = await statorctl([
      '--api',
      node.url,
      'demote-cluster',
      '--restore-command',
      'cp /archive/%f %p',
      '--force',
    ]);
    expect(result).toMatchObject({ code: 0, stderr: '', questions: [] });
    expect(node.received.find((r) => r.method === 'PATCH')?.body).toEqual({
      standby_cluster: { restore_command: 'cp /archive/%f %p' },
    });
    expect(result.stdout).toMatch(/cluster is successfully demoted\n/);
  });

  it('promote-cluster with --force asks nothing and sends standby_cluster: null', async () => {
    await start('standby_leader', 'leader');
    const result = await statorctl(['--api', node.url, 'promote-cluster', '--force']);
    expect(result).toMatchObject({ code: 0, stderr: '', questions: [] });
    expect(node.received.find((r) => r.method === 'PATCH')?.body).toEqual({ standby_cluster: null });
    expect(result.stdout).toMatch(
      /cluster is unlocked: False, leader role: in between, leader state: running\n.*cluster is successfully promoted\n/,
    );
  });

  it('sends nothing when the answer is not yes, or when the cluster is already in the required state', async () => {
    await start('standby_leader', 'leader');
    const declined = await statorctl(['--api', node.url, 'promote-cluster'], ['n']);
    expect(declined).toMatchObject({ code: 1, stderr: 'Error: Aborted cluster promotion\n' });
    const already = await statorctl(['--api', node.url, 'demote-cluster', '--host', 'h', '--force']);
    expect(already).toMatchObject({ code: 1, stderr: 'Error: Cluster is already in the required state\n' });
    expect(node.received.some((r) => r.method === 'PATCH')).toBe(false);
  });

  it("says the node's refusal as patronictl does", async () => {
    await start('leader', 'standby_leader');
    patchStatus = 400;
    const result = await statorctl(['--api', node.url, 'demote-cluster', '--host', 'h', '--force']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      'Error: Failed to demote demo cluster: /config PATCH status code=400, (standby_cluster.host: must be a host name or address)\n',
    );
  });

  it('refuses bad options before asking anything (exit 2)', async () => {
    await start('leader', 'standby_leader');
    const cases: Array<[string[], RegExp]> = [
      [['demote-cluster'], /At least --host, --port or --restore-command should be specified/],
      [['demote-cluster', '--host', 'h', '--port', '70000'], /--port: an integer from 1 to 65535, got '70000'/],
      [
        ['demote-cluster', '--host', 'h', '--primary-slot-name', 'Bad-Slot'],
        /standby_cluster.primary_slot_name: a slot name is/,
      ],
      [['demote-cluster', '--port', '5433'], /--port needs --host \(the remote primary\) or --restore-command/],
      [['promote-cluster', '--host', 'h'], /promote-cluster does not take --host/],
    ];
    for (const [args, message] of cases) {
      const result = await statorctl(['--api', node.url, ...args]);
      expect({ args, code: result.code, questions: result.questions }).toEqual({ args, code: 2, questions: [] });
      expect(result.stderr).toMatch(message);
    }
    expect(node.received.some((r) => r.method === 'PATCH')).toBe(false);
  });
});

describe('roleChangeState: when patronictl would call the change done', () => {
  const member = (name: string, role: string, state: string) => ({ name, role, state });
  const doc = (...members: ReturnType<typeof member>[]): ClusterDocument => ({ scope: 'demo', members });

  it.each([
    ['promoted: the leader runs as primary', doc(member('a', 'leader', 'running')), 'a', 'leader', true],
    [
      'not yet promoted: still the standby leader',
      doc(member('a', 'standby_leader', 'streaming')),
      'a',
      'leader',
      false,
    ],
    ['demoted: standby leader streaming', doc(member('a', 'standby_leader', 'streaming')), 'a', 'standby_leader', true],
    [
      'demoted elsewhere, the previous leader still stopped',
      doc(member('a', 'replica', 'stopped'), member('b', 'standby_leader', 'streaming')),
      'a',
      'standby_leader',
      false,
    ],
    ['no leader at all', doc(member('a', 'replica', 'stopped')), 'a', 'leader', false],
  ] as const)('%s', (_name, cluster, previous, target, done) => {
    expect(roleChangeState(cluster, previous, target).done).toBe(done);
  });

  it('reports progress as patronictl prints it', () => {
    expect(roleChangeState(doc(member('a', 'leader', 'running')), 'a', 'standby_leader').progress).toBe(
      'cluster is unlocked: False, leader role: primary, leader state: running',
    );
    expect(roleChangeState(doc(member('a', 'replica', 'stopped')), 'a', 'leader').progress).toBe(
      'cluster is unlocked: True, leader role: None, leader state: None',
    );
    expect(
      roleChangeState(
        doc(member('a', 'replica', 'stopped'), member('b', 'standby_leader', 'streaming')),
        'a',
        'standby_leader',
      ).progress,
    ).toBe(
      "cluster is unlocked: False, leader role: standby_leader, leader state: streaming, previous leader state: 'stopped'",
    );
  });
});
