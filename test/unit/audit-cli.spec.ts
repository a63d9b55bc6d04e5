import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AUDIT_EXIT, runAudit } from '../../src/audit/audit-cli';
import { RecordedEvent } from '../../src/events/event';
import { freePort } from '../helpers/ports';
import { removeDir, tmpDir } from '../helpers/tmp';
import { indexOf, syntheticLog, writeExport } from './audit-fixture';

const REPO_ROOT = join(__dirname, '..', '..');

/** Runs `stator audit <argv>` in-process; `api` answers the node API paths when given. */
async function audit(
  argv: string[],
  api?: Record<string, { status: number; body?: unknown }>,
  env: NodeJS.ProcessEnv = {},
) {
  let stdout = '';
  let stderr = '';
  const fakeFetch = (async (url: string | URL) => {
    const answer = api?.[new URL(String(url)).pathname];
    if (!api) throw new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } });
    return new Response(answer?.body === undefined ? 'not found' : JSON.stringify(answer.body), {
      status: answer?.status ?? 404,
    });
  }) as typeof fetch;
  const code = await runAudit(argv, {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    env,
    fetch: fakeFetch,
  });
  return { code, stdout, stderr };
}

describe('stator audit', () => {
  let dir: string;
  let log: RecordedEvent[];
  let clean: string;
  beforeAll(async () => {
    dir = tmpDir('stator-audit-');
    log = await syntheticLog();
    clean = writeExport(dir, 'clean.jsonl', log);
  });
  afterAll(() => removeDir(dir));

  describe('verify', () => {
    it('passes an untouched export: one line per check, then the number of events checked', async () => {
      const { code, stdout, stderr } = await audit(['verify', '--file', clean]);
      expect({ code, stderr }).toEqual({ code: AUDIT_EXIT.ok, stderr: '' });
      const streams = new Set(log.map((e) => e.stream)).size;
      const transitions = log.filter((e) => e.type.endsWith('.transition')).length;
      expect(stdout).toBe(
        [
          `audit of ${clean}`,
          `✔ hash chains: ${log.length} events in ${streams} streams, every link intact`,
          `✔ machine replay: ${transitions} transitions of 6 node machines replayed, all legal`,
          '✔ final states: 6 node machines end where their logs say',
          `${log.length} events checked, no problems`,
          '',
        ].join('\n'),
      );
    });

    it('names the line of an event whose data was altered (exit 1)', async () => {
      const events = [...log];
      const index = indexOf(events, (e) => e.type === 'switchover.scheduled');
      events[index] = { ...events[index], data: { ...events[index].data, member: 'node3' } };
      const { code, stdout } = await audit(['verify', '--file', writeExport(dir, 'altered.jsonl', events)]);
      expect(code).toBe(AUDIT_EXIT.problems);
      expect(stdout).toContain('✘ hash chains: 1 problem\n');
      expect(stdout).toContain(`${log.length} events checked, 1 problem\n`);
      expect(stdout).toContain(
        `  cluster#${log[index].seq} (line ${index + 1}): altered: its content does not match its hash\n`,
      );
    });

    it('names the event after a removed one, in the chain and in the replay (exit 1)', async () => {
      const removed = indexOf(log, (e) => e.stream === 'node/node2/postgres' && e.seq === 4);
      const events = log.filter((_, index) => index !== removed);
      const { code, stdout } = await audit(['verify', '--file', writeExport(dir, 'removed.jsonl', events)]);
      expect(code).toBe(AUDIT_EXIT.problems);
      // The next event of the stream moved up into the removed one's line.
      const position = `node/node2/postgres#5 (line ${removed + 1})`;
      expect(stdout).toContain(`  ${position}: removed: #4 is missing before it\n`);
      expect(stdout).toContain(
        `  ${position}: illegal transition: recorded from creating_replica, but the machine is in stopped.idle`,
      );
      expect(stdout).toMatch(/✔ final states/);
    });

    it('names the event that comes too late when two of a stream are swapped (exit 1)', async () => {
      const first = indexOf(log, (e) => e.stream === 'node/node1/role' && e.seq === 2);
      const second = indexOf(log, (e) => e.stream === 'node/node1/role' && e.seq === 3);
      const events = [...log];
      [events[first], events[second]] = [events[second], events[first]];
      const { code, stdout } = await audit(['verify', '--file', writeExport(dir, 'swapped.jsonl', events)]);
      expect(code).toBe(AUDIT_EXIT.problems);
      expect(stdout).toContain(`  node/node1/role#2 (line ${second + 1}): reordered: comes after #3 of its stream\n`);
      expect(stdout).toContain('✔ machine replay');
    });

    it("compares the node's /history and /schedule with the log's projections", async () => {
      const history = [[1, 50331808, 'no recovery target specified', '2026-01-01T00:00:17+00:00', 'node2']];
      const good = await audit(['verify', '--file', clean, '--api', 'http://127.0.0.1:8008/'], {
        '/history': { status: 200, body: history },
      });
      expect(good.code).toBe(AUDIT_EXIT.ok);
      expect(good.stdout).toContain('✔ /history of http://127.0.0.1:8008: 1 entry, as the log tells\n');
      expect(good.stdout).toContain('– /schedule of http://127.0.0.1:8008: not served (HTTP 404), not compared\n');

      const schedule = [
        {
          kind: 'switchover',
          at: '2026-01-01T02:00:00+00:00',
          requested_at: '2026-01-01T00:00:13.000Z',
          fate: 'cancelled',
          node: 'node1',
          candidate: 'node2',
          ended_at: '2026-01-01T00:00:14.000Z',
          reason: 'DELETE /switchover',
        },
      ];
      const both = await audit(['verify', '--file', clean, '--api', 'http://127.0.0.1:8008'], {
        '/history': { status: 200, body: history },
        '/schedule': { status: 200, body: schedule },
      });
      expect(both.stdout).toContain('✔ /schedule of http://127.0.0.1:8008: 1 operation, as the log tells\n');

      const differing = await audit(['verify', '--file', clean, '--api', 'http://127.0.0.1:8008'], {
        '/history': { status: 200, body: [[1, 1, 'other reason']] },
        '/schedule': { status: 200, body: [] },
      });
      expect(differing.code).toBe(AUDIT_EXIT.problems);
      expect(differing.stdout).toContain(
        '  /history entry 1: served [1,1,"other reason"], the log gives [1,50331808,"no recovery target specified"]\n',
      );
      expect(differing.stdout).toMatch(/\n {2}\/schedule: served \[\], the log gives \[\{"at":/);
    });

    it('exits 2 when the API does not answer', async () => {
      const { code, stderr } = await audit(['verify', '--file', clean, '--api', 'http://127.0.0.1:1']);
      expect(code).toBe(AUDIT_EXIT.usageOrSource);
      expect(stderr).toBe(
        'stator audit: cannot read the source: http://127.0.0.1:1/history unreachable: ECONNREFUSED\n',
      );
    });
  });

  describe('export', () => {
    it('writes the events in order as JSON lines, within --from and --to (inclusive)', async () => {
      const all = await audit(['export', '--file', clean]);
      expect(all.stdout).toBe(log.map((e) => `${JSON.stringify(e)}\n`).join(''));
      const window = await audit([
        'export',
        '--file',
        clean,
        '--from',
        '2026-01-01T00:00:13Z',
        '--to',
        '2026-01-01T01:00:14+01:00',
      ]);
      expect(window.code).toBe(AUDIT_EXIT.ok);
      expect(
        window.stdout
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line).type),
      ).toEqual(['switchover.scheduled', 'switchover.cancelled']);
    });

    it('writes what verify reads back unchanged', async () => {
      const exported = writeExport(dir, 'reexported.jsonl', []);
      writeFileSync(exported, (await audit(['export', '--file', clean])).stdout);
      expect((await audit(['verify', '--file', exported])).code).toBe(AUDIT_EXIT.ok);
    });
  });

  describe('replay', () => {
    it('prints the cluster as it was at the instant, scheduled operations with their fate then', async () => {
      const { code, stdout } = await audit(['replay', '--file', clean, '--at', '2026-01-01T00:00:13.500Z']);
      expect(code).toBe(AUDIT_EXIT.ok);
      expect(stdout).toBe(
        [
          'cluster at 2026-01-01T00:00:13.500Z (29 events up to then)',
          'leader:   node1',
          'timeline: 1',
          'paused:   no',
          'members:',
          '  node1  state running, role primary, leadership leader',
          '         machines: leadership leader, postgres running.idle, role primary',
          '  node2  state running, role replica, leadership follower',
          '         machines: leadership follower, postgres running.idle, role replica',
          'scheduled operations:',
          '  switchover from node1 to node2 for 2026-01-01T02:00:00+00:00, requested 2026-01-01T00:00:13.000Z: still scheduled',
          '',
        ].join('\n'),
      );
      const paused = await audit(['replay', '--file', clean, '--at', '2026-01-01T00:00:04Z']);
      expect(paused.stdout).toContain('paused:   yes\n');
      expect(paused.stdout).toContain('  node1  state stopped, role primary, leadership leader\n');
    });

    it('--json: the same as one document', async () => {
      const { stdout } = await audit(['replay', '--file', clean, '--at', '2026-01-01T01:00:00Z', '--json']);
      const document = JSON.parse(stdout);
      expect(document).toMatchObject({
        at: '2026-01-01T01:00:00.000Z',
        events: log.length,
        leader: 'node2',
        timeline: 2,
        paused: false,
      });
      expect(document.members.node1).toEqual({
        state: 'running',
        role: 'demoted',
        leadership: 'follower',
        machines: { leadership: 'follower', postgres: 'running.idle', role: 'demoted' },
      });
      expect(document.schedule).toEqual([
        expect.objectContaining({ kind: 'switchover', fate: 'cancelled', ended_at: '2026-01-01T00:00:14.000Z' }),
      ]);
      expect(document.history).toHaveLength(1);
    });
  });

  describe('usage and sources', () => {
    it.each([
      [[], 'a command is needed: verify, export or replay'],
      [['check', '--file', 'x'], "unknown command 'check'"],
      [['verify'], 'a source is needed: --etcd with --scope, --config or --file'],
      [['verify', '--file', 'a', '--config', 'b'], 'one source only, got --config and --file'],
      [['verify', '--etcd', '127.0.0.1:2379'], '--etcd needs --scope NAME'],
      [['verify', '--file', 'a', '--scope', 's'], '--scope goes with --etcd'],
      [['verify', '--config', 'a', '--namespace', '/staging'], '--namespace goes with --etcd'],
      [['export', '--file', 'a', '--api', 'http://x'], 'export does not take --api'],
      [['replay', '--file', 'a'], 'replay needs --at ISO'],
      [['replay', '--file', 'a', '--at', 'yesterday'], "--at: not an ISO 8601 time: 'yesterday'"],
      [['verify', '--file', 'a', '--api', 'localhost:8008'], "--api: http or https only, got 'localhost:8008'"],
      [['verify', '--file', 'a', '--bogus'], "Unknown option '--bogus'"],
    ])('%j is a usage error (exit 2)', async (argv, message) => {
      const { code, stdout, stderr } = await audit(argv);
      expect(code).toBe(AUDIT_EXIT.usageOrSource);
      expect(stdout).toBe('');
      expect(stderr).toContain(`stator audit: usage error: ${message}`);
      expect(stderr).toContain('usage: stator audit verify <source>');
    });

    it('prints the usage on --help (exit 0)', async () => {
      const { code, stdout } = await audit(['--help']);
      expect(code).toBe(AUDIT_EXIT.ok);
      expect(stdout).toContain('exit codes: 0 all good, 1 problems found, 2 usage error or source unreachable');
    });

    it('exits 2 naming the source it cannot read: a missing file, a line that is not an event, etcd down', async () => {
      const missing = await audit(['verify', '--file', join(dir, 'missing.jsonl')]);
      expect(missing).toMatchObject({
        code: AUDIT_EXIT.usageOrSource,
        stderr: expect.stringContaining('cannot read the source: '),
      });
      expect(missing.stderr).toContain('ENOENT');

      const garbled = writeExport(dir, 'garbled.jsonl', log.slice(0, 2));
      writeFileSync(garbled, `${JSON.stringify(log[0])}\n{"stream": "clus\n`);
      expect((await audit(['verify', '--file', garbled])).stderr).toBe(
        `stator audit: cannot read the source: ${garbled} line 2: not an event: {"stream": "clus\n`,
      );

      const port = await freePort();
      const down = await audit(['verify', '--etcd', `127.0.0.1:${port}`, '--scope', 'demo']);
      expect(down.code).toBe(AUDIT_EXIT.usageOrSource);
      expect(down.stderr).toContain(`cannot read the source: etcd 127.0.0.1:${port}, scope demo: unreachable: `);
    });

    it('takes etcd3.hosts and scope from --config, with the environment overrides the agent applies', async () => {
      const port = await freePort();
      const config = join(REPO_ROOT, 'test', 'fixtures', 'config', 'patroni-3-etcd3.yml');
      const { code, stderr } = await audit(['verify', '--config', config], undefined, {
        PATRONI_ETCD3_HOSTS: `127.0.0.1:${port}`,
      });
      expect(code).toBe(AUDIT_EXIT.usageOrSource);
      expect(stderr).toContain(`cannot read the source: etcd 127.0.0.1:${port}, scope batman: unreachable: `);

      const broken = join(dir, 'broken.yml');
      writeFileSync(broken, 'scope: audited\netcd3:\n  hosts: []\n');
      const invalid = await audit(['verify', '--config', broken]);
      expect(invalid.code).toBe(AUDIT_EXIT.usageOrSource);
      expect(invalid.stderr).toMatch(new RegExp(`^stator audit: cannot read the source: ${broken}: .*etcd3.hosts`));
    });
  });

  it('end to end: `stator audit verify --file` exits 0, then 1 on a tampered copy (needs `npm run build`)', () => {
    expect(existsSync(join(REPO_ROOT, 'dist', 'src', 'audit', 'audit-cli.js'))).toBe(true);
    const run = (file: string) =>
      spawnSync(process.execPath, ['bin/stator.js', 'audit', 'verify', '--file', file], {
        cwd: REPO_ROOT,
        encoding: 'utf8',
      });
    const ok = run(clean);
    expect({ status: ok.status, stderr: ok.stderr }).toEqual({ status: 0, stderr: '' });
    expect(ok.stdout).toContain(`${log.length} events checked, no problems`);
    const tampered = [...log];
    tampered[0] = { ...tampered[0], at: '2025-12-31T23:59:59.000Z' };
    expect(run(writeExport(dir, 'tampered.jsonl', tampered)).status).toBe(AUDIT_EXIT.problems);
  });
});
