import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { patchOf, withSettings } from '../../../src/ctl/commands/edit-config';
import { unifiedDiff } from '../../../src/ctl/diff';
import { removeDir, tmpDir } from '../../helpers/tmp';
import { FakeNode, json, statorctl } from './fake-node';

/** The shape @nestjs/terminus answers (`HealthCheckResult`). */
const healthy = {
  status: 'ok',
  info: { etcd: { status: 'up', latency_ms: 3 }, postgres: { status: 'up', state: 'running' } },
  error: {},
  details: {
    etcd: { status: 'up', latency_ms: 3 },
    postgres: { status: 'up', state: 'running' },
    fence: { status: 'up', pid: 4242 },
  },
};
const failing = {
  status: 'error',
  info: { etcd: { status: 'up', latency_ms: 5 } },
  error: { postgres: { status: 'down', message: 'connection refused' } },
  details: { etcd: { status: 'up', latency_ms: 5 }, postgres: { status: 'down', message: 'connection refused' } },
};

describe('statorctl diagnose', () => {
  const nodes: FakeNode[] = [];
  beforeAll(async () => {
    // node1 and node2 serve the diagnostics (node2 through Patroni's path, answering 503 as terminus does); node3 is an older agent.
    nodes.push(await new FakeNode({ 'GET /stator/diagnostics': json(healthy) }).start());
    nodes.push(await new FakeNode({ 'GET /patroni/diagnostics': json(failing, 503) }).start());
    nodes.push(await new FakeNode({}).start());
    const cluster = {
      scope: 'demo',
      members: [
        { name: 'node1', role: 'leader', state: 'running', api_url: `${nodes[0].url}/stator` },
        { name: 'node2', role: 'replica', state: 'streaming', api_url: `${nodes[1].url}/patroni` },
        { name: 'node3', role: 'replica', state: 'streaming', api_url: `${nodes[2].url}/stator` },
      ],
    };
    for (const node of nodes) node.routes['GET /cluster'] = json(cluster);
  });
  afterAll(() => Promise.all(nodes.map((node) => node.stop())));

  it("shows every member's indicators, an older agent as not available, and exits 1 when one is down", async () => {
    const result = await statorctl(['--api', nodes[0].url, 'doctor']);
    expect(result.code).toBe(1);
    expect(result.stdout.split('\n')).toEqual([
      '+ Cluster: demo -----+--------+-----------------------------+',
      '| Member | Indicator | Status | Details                     |',
      '+--------+-----------+--------+-----------------------------+',
      '| node1  | etcd      | up     | latency_ms: 3               |',
      '| node1  | postgres  | up     | state: running              |',
      '| node1  | fence     | up     | pid: 4242                   |',
      '| node2  | etcd      | up     | latency_ms: 5               |',
      '| node2  | postgres  | down   | message: connection refused |',
      '| node3  |           |        | not available (older agent) |',
      '+--------+-----------+--------+-----------------------------+',
      '',
    ]);
    expect(nodes[1].received.map((r) => r.path)).toContain('/patroni/diagnostics');
  });

  it('writes the documents as JSON', async () => {
    const result = await statorctl(['--api', nodes[0].url, 'diagnose', '--format', 'json']);
    expect(JSON.parse(result.stdout)).toEqual([
      { member: 'node1', ...healthy },
      { member: 'node2', ...failing },
      { member: 'node3', status: 'not available (older agent)' },
    ]);
  });
});

describe('statorctl edit-config', () => {
  let node: FakeNode;
  let dir: string;
  const config = {
    ttl: 30,
    loop_wait: 10,
    postgresql: { use_pg_rewind: true, parameters: { max_connections: 100, work_mem: '4MB' } },
  };
  beforeAll(async () => {
    dir = tmpDir('statorctl-edit-');
    node = await new FakeNode({
      'GET /cluster': json({ scope: 'demo', members: [] }),
      'GET /config': json(config),
      'PATCH /config': json({}),
    }).start();
  });
  afterAll(async () => {
    await node.stop();
    removeDir(dir);
  });
  beforeEach(() => node.received.splice(0));

  function editor(script: string): string {
    const path = join(dir, `editor-${Math.random().toString(36).slice(2)}.sh`);
    writeFileSync(path, `#!/bin/sh\n${script}\n`);
    chmodSync(path, 0o755);
    return path;
  }

  it('opens $EDITOR, shows the diff, asks, and patches only what changed', async () => {
    const EDITOR = editor(`sed -i -e 's/^ttl: 30/ttl: 40/' -e '/work_mem/d' "$1"`);
    const result = await statorctl(['--api', node.url, 'edit-config'], ['y'], { EDITOR });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('-ttl: 30\n+ttl: 40\n');
    expect(result.stdout).toContain('-    work_mem: 4MB\n');
    expect(result.questions).toEqual(['Apply these changes? [y/N]: ']);
    expect(node.received.find((r) => r.method === 'PATCH')?.body).toEqual({
      ttl: 40,
      postgresql: { parameters: { work_mem: null } },
    });
    expect(result.stdout).toMatch(/Configuration changed\n$/);
  });

  it('refuses an invalid edit with the reasons, sending nothing', async () => {
    const EDITOR = editor(`sed -i -e 's/^ttl: 30/ttl: 2/' "$1"; echo 'nonsense_key: 1' >> "$1"`);
    const result = await statorctl(['--api', node.url, 'edit-config', '--force'], [], { EDITOR });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('ttl: must be an integer from 5 to 86400, got 2');
    expect(result.stderr).toContain('nonsense_key: unknown key');
    expect(node.received.filter((r) => r.method === 'PATCH')).toEqual([]);
  });

  it('refuses text that is not YAML and says when nothing changed', async () => {
    const broken = await statorctl(['--api', node.url, 'edit-config'], [], { EDITOR: editor(`echo 'ttl: [' > "$1"`) });
    expect(broken.code).toBe(1);
    expect(broken.stderr).toMatch(/^Error: the edited configuration is not YAML, nothing applied/);
    const same = await statorctl(['--api', node.url, 'edit-config'], [], { EDITOR: editor('true') });
    expect(same).toMatchObject({ code: 0, stdout: 'Not changed\n' });
  });

  it('sets keys with -s and -p without an editor; null removes', () => {
    expect(
      withSettings(config, [
        ['-s', 'loop_wait=5'],
        ['-p', 'work_mem=null'],
        ['-p', 'shared_buffers=1GB'],
        ['-s', 'postgresql.use_slots=on'],
      ]),
    ).toEqual({
      ttl: 30,
      loop_wait: 5,
      postgresql: { use_pg_rewind: true, use_slots: true, parameters: { max_connections: 100, shared_buffers: '1GB' } },
    });
    expect(() => withSettings(config, [['-s', 'novalue']])).toThrow("-s: must be KEY=VALUE, got 'novalue'");
  });

  it('patches nested changes and removals', () => {
    expect(patchOf({ a: 1, b: { c: 2, d: 3 }, e: [1] }, { a: 1, b: { c: 2 }, e: [1, 2], f: 'x' })).toEqual({
      b: { d: null },
      e: [1, 2],
      f: 'x',
    });
  });
});

describe('unified diff', () => {
  it('shows removals before additions with context', () => {
    expect(unifiedDiff('a\nb\nc\n', 'a\nB\nc\n', ['before', 'after'])).toBe(
      '--- before\n+++ after\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n',
    );
  });
  it('is empty for equal texts and splits distant changes into hunks', () => {
    expect(unifiedDiff('x\n', 'x\n', ['a', 'b'])).toBe('');
    const before = Array.from({ length: 20 }, (_, i) => `l${i}`).join('\n');
    const after = before.replace('l1\n', 'L1\n').replace('l18', 'L18');
    expect(unifiedDiff(before, after, ['a', 'b']).match(/^@@/gm)).toHaveLength(2);
  });
});
