import { execFileSync } from 'node:child_process';
import { lstatSync, readlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { sql } from '../helpers/sql';

/**
 * The operation endpoints on a real 3-node cluster in Patroni compatibility mode: each success
 * path and each error answer, bad input, then Debian's patronictl driving the same cluster.
 */
jest.setTimeout(120_000);

let cluster: LocalCluster;
let baseDir: string;

interface Answer {
  status: number;
  type: string;
  text: string;
}

async function call(
  node: LocalNode,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const init: RequestInit = { method, headers: { ...headers }, signal: AbortSignal.timeout(60_000) };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
  }
  const response = await fetch(node.apiUrl + path, init);
  return { status: response.status, type: response.headers.get('content-type') ?? '', text: await response.text() };
}

/**
 * The status line a body of `length` bytes gets when only its headers and first bytes are sent. A body over the limit
 * is refused by its Content-Length, before it is read, and the connection closed: a client still uploading may then
 * see its write fail (fetch on Node 24 reported EPIPE in place of the answer, once in a clean-clone CI), where curl
 * shows the 413. Sending the headers alone asks the same question without that race.
 */
function statusForDeclaredLength(node: LocalNode, method: string, path: string, length: number): Promise<number> {
  const { hostname, port } = new URL(node.apiUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    socket.setTimeout(30_000, () => socket.destroy(new Error(`no answer to ${method} ${path} within 30 s`)));
    socket.on('connect', () =>
      socket.write(
        `${method} ${path} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${length}\r\n\r\n{"leader": "x`,
      ),
    );
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      const statusLine = /^HTTP\/1\.1 (\d{3}) /.exec(received);
      if (!statusLine) return;
      socket.destroy();
      resolve(Number(statusLine[1]));
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`the connection closed without an answer: ${JSON.stringify(received)}`)));
  });
}

const json = (answer: Answer) => JSON.parse(answer.text) as Record<string, unknown>;

async function leader(): Promise<LocalNode> {
  return cluster.waitForLeader(30_000);
}

async function replicas(): Promise<LocalNode[]> {
  const current = await leader();
  return cluster.nodes.filter((n) => n !== current);
}

async function postmasterStart(node: LocalNode): Promise<string> {
  return (await node.status())?.postmaster_start_time as string;
}

/** Where node `index`'s clones put their WAL (pg_wal is then a link to it). */
const walVolumeOf = (index: number) => join(baseDir, `node${index}`, 'wal-volume');

beforeAll(async () => {
  baseDir = tmpDir('stator-operations-');
  cluster = await LocalCluster.start({
    nodes: 3,
    baseDir,
    ttl: 10,
    loopWait: 2,
    retryTimeout: 4,
    compat: 'patroni',
    // Each clone keeps its WAL outside its data directory (a WAL volume), as pg_basebackup's --waldir sets it up.
    postgresql: (index) => ({ basebackup: ['no-sync', { waldir: walVolumeOf(index) }] }),
  });
  const current = await leader();
  await cluster.waitForStreaming(
    cluster.nodes.filter((n) => n !== current).map((n) => n.name),
    60_000,
  );
});

afterAll(async () => {
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

describe('POST /switchover and /failover', () => {
  it('refuses incomplete or impossible requests with the reference texts, changing nothing', async () => {
    const current = await leader();
    const [other] = await replicas();
    const cases: Array<[string, unknown, number, string]> = [
      ['/switchover', {}, 400, 'Switchover could be performed only from a specific leader'],
      ['/failover', { foo: 'bar' }, 400, 'Failover could be performed only to a specific candidate'],
      ['/switchover', { leader: 'nobody' }, 412, 'leader name does not match'],
      ['/switchover', { leader: current.name, candidate: 'nobody' }, 412, 'candidate does not exists'],
      [
        '/switchover',
        { leader: current.name, candidate: current.name },
        400,
        'Switchover target and source are the same',
      ],
      [
        '/switchover',
        { leader: current.name, scheduled_at: '2020-01-01T00:00:00+00:00' },
        422,
        'Cannot schedule switchover in the past',
      ],
      [
        '/switchover',
        { leader: current.name, scheduled_at: '2099-01-01T00:00:00' },
        400,
        'Timezone information is mandatory for the scheduled switchover',
      ],
      [
        '/failover',
        { candidate: other.name, scheduled_at: '2099-01-01T00:00:00Z' },
        400,
        "Failover can't be scheduled",
      ],
    ];
    for (const [path, body, status, text] of cases) {
      const answer = await call(current, 'POST', path, body);
      expect({ path, body, status: answer.status, text: answer.text }).toEqual({ path, body, status, text });
      expect(answer.type).toBe('text/plain; charset=utf-8');
    }
    expect((await leader()).name).toBe(current.name);
  });

  it('switches over to a named candidate and answers once the new leader holds the lock', async () => {
    const old = await leader();
    const [candidate] = await replicas();
    const started = Date.now();
    const answer = await call(old, 'POST', '/switchover', { leader: old.name, candidate: candidate.name });
    expect(answer).toMatchObject({ status: 200, text: `Successfully switched over to "${candidate.name}"` });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect((await cluster.waitForLeader(10_000)).name).toBe(candidate.name);
    await cluster.waitForStreaming([old.name], 30_000);
  });

  it('schedules a switchover, shows it in /cluster, deletes it, and runs one at its time', async () => {
    const current = await leader();
    const at = new Date(Date.now() + 60_000).toISOString().replace('Z', '+00:00');
    expect(await call(current, 'POST', '/switchover', { leader: current.name, scheduled_at: at })).toMatchObject({
      status: 202,
      text: 'Switchover scheduled',
    });
    const scheduled = json(await call(current, 'GET', '/cluster')).scheduled_switchover as { at: string; from: string };
    expect(scheduled.from).toBe(current.name);
    expect(Date.parse(scheduled.at)).toBe(Date.parse(at));
    expect(await call(current, 'DELETE', '/switchover')).toMatchObject({
      status: 200,
      text: 'scheduled switchover deleted',
    });
    expect(await call(current, 'DELETE', '/switchover')).toMatchObject({
      status: 404,
      text: 'no switchover is scheduled',
    });
    expect(json(await call(current, 'GET', '/cluster')).scheduled_switchover).toBeUndefined();

    const [candidate] = await replicas();
    const soon = new Date(Date.now() + 3_000).toISOString();
    expect(
      await call(current, 'POST', '/switchover', {
        leader: current.name,
        candidate: candidate.name,
        scheduled_at: soon,
      }),
    ).toMatchObject({ status: 202 });
    await waitFor(async () => (await candidate.healthCode('/primary')) === 200, {
      timeoutMs: 20_000,
      description: `${candidate.name} leading after the scheduled switchover`,
    });
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(soon));
    await cluster.waitForStreaming([current.name], 30_000);
  });

  it('fails over to a named candidate', async () => {
    const [candidate] = await replicas();
    const answer = await call(candidate, 'POST', '/failover', { candidate: candidate.name });
    expect(answer).toMatchObject({ status: 200, text: `Successfully failed over to "${candidate.name}"` });
    expect((await cluster.waitForLeader(10_000)).name).toBe(candidate.name);
    await cluster.waitForStreaming(
      (await replicas()).map((n) => n.name),
      30_000,
    );
  });
});

describe('POST and DELETE /restart', () => {
  it('restarts a replica now, and refuses when its conditions do not hold', async () => {
    const [replica] = await replicas();
    const before = await postmasterStart(replica);
    expect(await call(replica, 'POST', '/restart', { role: 'primary' })).toMatchObject({
      status: 503,
      text: 'restart conditions are not satisfied',
    });
    expect(await call(replica, 'POST', '/restart', { role: 'master' })).toMatchObject({
      status: 400,
      text: 'PostgreSQL role should be either primary, standby_leader, or replica',
    });
    expect(await postmasterStart(replica)).toBe(before);
    expect(await call(replica, 'POST', '/restart', { role: 'replica' })).toMatchObject({
      status: 200,
      text: 'restarted successfully',
    });
    expect(await postmasterStart(replica)).not.toBe(before);
    await cluster.waitForStreaming([replica.name], 30_000);
  });

  it('schedules one restart per node, deletes it, and runs one at its time', async () => {
    const [replica] = await replicas();
    const later = new Date(Date.now() + 600_000).toISOString();
    expect(await call(replica, 'POST', '/restart', { schedule: later })).toMatchObject({
      status: 202,
      text: 'Restart scheduled',
    });
    expect(await call(replica, 'POST', '/restart', { schedule: later })).toMatchObject({
      status: 409,
      text: 'Another restart is already scheduled',
    });
    expect((await replica.status())?.scheduled_restart).toMatchObject({ schedule: later });
    expect(await call(replica, 'DELETE', '/restart')).toMatchObject({ status: 200, text: 'scheduled restart deleted' });
    expect(await call(replica, 'DELETE', '/restart')).toMatchObject({ status: 404, text: 'no restarts are scheduled' });

    const before = await postmasterStart(replica);
    const soon = new Date(Date.now() + 2_000).toISOString();
    expect(await call(replica, 'POST', '/restart', { schedule: soon })).toMatchObject({ status: 202 });
    await waitFor(
      async () => (await postmasterStart(replica)) !== before && (await postmasterStart(replica)) !== undefined,
      {
        timeoutMs: 20_000,
        description: 'the scheduled restart ran',
      },
    );
    expect((await replica.status())?.scheduled_restart).toBeUndefined();
  });
});

describe('POST /reload and /reinitialize', () => {
  it('accepts a reload', async () => {
    expect(await call(await leader(), 'POST', '/reload')).toMatchObject({ status: 202, text: 'reload scheduled' });
  });

  it('refuses to reinitialize the leader, and reclones a replica', async () => {
    const current = await leader();
    expect(await call(current, 'POST', '/reinitialize', { force: true })).toMatchObject({
      status: 503,
      text: 'I am the leader, can not reinitialize',
    });
    // A clone (the node that ran initdb keeps its WAL in its data directory).
    const replica = (await replicas()).find((node) => lstatSync(join(node.dataDir, 'pg_wal')).isSymbolicLink())!;
    await sql(current, 'CREATE TABLE IF NOT EXISTS reinit_probe(v text)');
    await sql(current, "INSERT INTO reinit_probe VALUES ('before reinit')");
    const before = await postmasterStart(replica);
    expect(await call(replica, 'POST', '/reinitialize', {})).toMatchObject({
      status: 200,
      text: 'reinitialize started',
    });
    // The answer comes before the old server stops: streaming counts only from the recloned server.
    await waitFor(async () => ![undefined, before].includes(await postmasterStart(replica)), {
      timeoutMs: 60_000,
      description: `${replica.name} running a new postmaster`,
    });
    await cluster.waitForStreaming([replica.name], 60_000);
    const rows = await sql<{ v: string }>(replica, 'SELECT v FROM reinit_probe');
    expect(rows.map((r) => r.v)).toContain('before reinit');
    // The old WAL went with the old data directory, so the new clone could put its own in the same place.
    expect(readlinkSync(join(replica.dataDir, 'pg_wal'))).toBe(walVolumeOf(replica.index));
  });
});

describe('PATCH and PUT /config', () => {
  it('validates types, naming the key, and changes nothing on a bad request', async () => {
    const current = await leader();
    const before = await call(current, 'GET', '/config');
    const bad = await call(current, 'PATCH', '/config', { loop_wait: 'soon' });
    expect(bad.status).toBe(400);
    expect(json(bad).message).toContain('loop_wait');
    expect((await call(current, 'PATCH', '/config', {})).status).toBe(400);
    expect((await call(current, 'GET', '/config')).text).toBe(before.text);
  });

  it('merges a patch, removes keys set to null, and a parameter needing a restart shows as pending', async () => {
    const current = await leader();
    const patched = await call(current, 'PATCH', '/config', {
      postgresql: { parameters: { max_connections: 60, work_mem: '8MB' } },
    });
    expect(patched.status).toBe(200);
    expect((json(patched).postgresql as { parameters: Record<string, unknown> }).parameters).toMatchObject({
      max_connections: 60,
      work_mem: '8MB',
    });
    expect(JSON.parse((await call(current, 'GET', '/config')).text)).toEqual(json(patched));
    await waitFor(async () => (await current.status())?.pending_restart === true, {
      timeoutMs: 20_000,
      description: 'pending_restart on the leader',
    });
    expect(((await current.status())?.pending_restart_reason as Record<string, unknown>).max_connections).toMatchObject(
      { new_value: '60' },
    );

    const removed = await call(current, 'PATCH', '/config', { postgresql: { parameters: { work_mem: null } } });
    expect((json(removed).postgresql as { parameters: Record<string, unknown> }).parameters.work_mem).toBeUndefined();
  });

  it('a cluster-wide pg_hba, pg_ident and recovery_conf reach every node, PostgreSQL reloaded, and go away with null', async () => {
    const current = await leader();
    const pgHba = [
      'local all all trust',
      'local replication all trust',
      'host all all all scram-sha-256',
      'host replication all all scram-sha-256',
      'host sameuser all 192.0.2.0/24 scram-sha-256',
    ];
    const patched = await call(current, 'PATCH', '/config', {
      postgresql: {
        pg_hba: pgHba,
        pg_ident: ['cluster_map someone postgres'],
        recovery_conf: { recovery_min_apply_delay: '1s' },
      },
    });
    expect(patched.status).toBe(200);
    const everywhere = async (probe: (node: LocalNode) => Promise<boolean>) =>
      (await Promise.all(cluster.nodes.map(probe))).every(Boolean);
    const hbaHasMarker = async (node: LocalNode) =>
      (await sql(node, "SELECT 1 FROM pg_hba_file_rules WHERE address = '192.0.2.0'")).length === 1;
    const identHasMap = async (node: LocalNode) =>
      (await sql(node, "SELECT 1 FROM pg_ident_file_mappings WHERE map_name = 'cluster_map'")).length === 1;
    await waitFor(() => everywhere(async (node) => (await hbaHasMarker(node)) && (await identHasMap(node))), {
      timeoutMs: 20_000,
      description: 'the /config pg_hba and pg_ident on every node',
    });
    const delay = async (node: LocalNode) =>
      (await sql<{ delay: string }>(node, "SELECT current_setting('recovery_min_apply_delay') AS delay"))[0].delay;
    await waitFor(async () => (await Promise.all((await replicas()).map(delay))).every((value) => value === '1s'), {
      timeoutMs: 20_000,
      description: 'recovery_min_apply_delay on the replicas',
    });
    expect(await delay(current)).toBe('0');

    expect(
      (await call(current, 'PATCH', '/config', { postgresql: { pg_hba: null, pg_ident: null, recovery_conf: null } }))
        .status,
    ).toBe(200);
    await waitFor(() => everywhere(async (node) => !(await hbaHasMarker(node)) && (await delay(node)) === '0'), {
      timeoutMs: 20_000,
      description: 'the default pg_hba back on every node',
    });
  });

  it('replaces the whole configuration with PUT', async () => {
    const current = await leader();
    const config = json(await call(current, 'GET', '/config'));
    const replaced = await call(current, 'PUT', '/config', { ...config, maximum_lag_on_failover: 2097152 });
    expect(replaced.status).toBe(200);
    expect(json(await call(current, 'GET', '/config')).maximum_lag_on_failover).toBe(2097152);
  });
});

describe('bad input on every endpoint that reads a body', () => {
  it.each(['/switchover', '/failover', '/restart', '/reinitialize', '/config'])(
    '%s: invalid JSON, a huge body and a wrong content type get a clear 4xx',
    async (path) => {
      const current = await leader();
      const method = path === '/config' ? 'PATCH' : 'POST';
      const invalid = await call(current, method, path, '{"leader": ');
      expect(invalid.status).toBe(400);
      expect(await statusForDeclaredLength(current, method, path, 2 * 1024 * 1024)).toBe(413);
      const wrongType = await call(current, method, path, 'leader=x', { 'content-type': 'text/plain' });
      expect(wrongType.status).toBe(415);
      expect((await leader()).name).toBe(current.name);
    },
  );
});

describe("Debian's patronictl against the cluster (compat: patroni)", () => {
  let ctlConfig: string;
  const ctl = (...args: string[]) =>
    execFileSync('patronictl', ['-c', ctlConfig, ...args], {
      encoding: 'utf8',
      timeout: 60_000,
      stdio: ['ignore', 'pipe', 'pipe'],
    });

  beforeAll(() => {
    ctlConfig = join(baseDir, 'patronictl.yml');
    writeFileSync(
      ctlConfig,
      `scope: ${cluster.scope}\nnamespace: /service\netcd3:\n  hosts: ${cluster.etcd.endpoint}\n`,
    );
  });

  it('lists, shows and edits the configuration, and reads the history', async () => {
    expect(ctl('list')).toMatch(/Leader/);
    expect(ctl('show-config')).toMatch(/loop_wait: 2/);
    ctl('edit-config', '--force', '-s', 'maximum_lag_on_failover=3145728');
    expect(ctl('show-config')).toMatch(/maximum_lag_on_failover: 3145728/);
    expect(ctl('history')).toMatch(/no recovery target specified|TL/);
  });

  it('switches over, fails over, restarts, reloads and reinitializes', async () => {
    const old = await leader();
    const [candidate, other] = await replicas();
    ctl('switchover', '--force', '--leader', old.name, '--candidate', candidate.name);
    expect((await cluster.waitForLeader(15_000)).name).toBe(candidate.name);
    await cluster.waitForStreaming([old.name, other.name], 30_000);

    ctl('failover', '--force', '--candidate', old.name);
    expect((await cluster.waitForLeader(15_000)).name).toBe(old.name);
    await cluster.waitForStreaming([candidate.name, other.name], 30_000);

    const before = await postmasterStart(other);
    expect(ctl('restart', '--force', cluster.scope, other.name)).toMatch(/Success: restart on member/);
    expect(await postmasterStart(other)).not.toBe(before);
    expect(ctl('reload', '--force', cluster.scope, other.name)).toMatch(/Reload request received for member/);
    expect(ctl('reinit', '--force', '--wait', cluster.scope, other.name)).toMatch(/Success: reinitialize for member/);
    await cluster.waitForStreaming([other.name], 60_000);
  });

  it('pauses and resumes, and flushes a scheduled switchover', async () => {
    ctl('pause', '--wait');
    for (const node of cluster.nodes) expect((await node.status())?.pause).toBe(true);
    ctl('resume', '--wait');
    for (const node of cluster.nodes) expect((await node.status())?.pause).toBeUndefined();

    const current = await leader();
    const at = new Date(Date.now() + 600_000).toISOString();
    expect(await call(current, 'POST', '/switchover', { leader: current.name, scheduled_at: at })).toMatchObject({
      status: 202,
    });
    expect(ctl('flush', '--force', cluster.scope, 'switchover')).toMatch(/scheduled switchover deleted|Success/);
    expect(json(await call(current, 'GET', '/cluster')).scheduled_switchover).toBeUndefined();
  });
});

describe('projections served from the event log', () => {
  it("serves /history as PostgreSQL's own timeline history file says", async () => {
    const current = await leader();
    const [{ timeline }] = await sql<{ timeline: number }>(
      current,
      'SELECT timeline_id AS timeline FROM pg_control_checkpoint()',
    );
    const file = `pg_wal/${timeline.toString(16).toUpperCase().padStart(8, '0')}.history`;
    const [{ content }] = await sql<{ content: string }>(current, 'SELECT pg_read_file($1) AS content', [file]);
    const fromFile = content
      .split('\n')
      .filter((line) => /^\d+\t/.test(line))
      .map((line) => {
        const [tl, lsn, ...reason] = line.split('\t');
        const [high, low] = lsn.split('/');
        return [Number(tl), parseInt(high, 16) * 2 ** 32 + parseInt(low, 16), reason.join('\t').trim()];
      });
    await waitFor(
      async () => (JSON.parse((await call(current, 'GET', '/history')).text) as unknown[]).length === fromFile.length,
      {
        timeoutMs: 10_000,
        description: 'every timeline switch in /history',
      },
    );
    const served = JSON.parse((await call(current, 'GET', '/history')).text) as Array<
      [number, number, string, string, string]
    >;
    expect(served.map(([tl, lsn, reason]) => [tl, lsn, reason])).toEqual(fromFile);
    for (const entry of served) expect(entry[3]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}[+-]\d{2}:\d{2}$/);
  });

  it('serves the scheduled-operation timeline with each fate', async () => {
    const current = await leader();
    const schedule = JSON.parse((await call(current, 'GET', '/schedule')).text) as Array<{
      kind: string;
      fate: string;
    }>;
    const fates = schedule.map((op) => `${op.kind} ${op.fate}`);
    expect(fates).toEqual(
      expect.arrayContaining(['switchover cancelled', 'switchover executed', 'restart cancelled', 'restart executed']),
    );
  });

  it('keeps a scheduled restart across an agent restart, rebuilt from the event log', async () => {
    const [replica] = await replicas();
    const later = new Date(Date.now() + 600_000).toISOString();
    expect(await call(replica, 'POST', '/restart', { schedule: later, role: 'replica' })).toMatchObject({
      status: 202,
    });
    await waitFor(
      async () => {
        const schedule = JSON.parse((await call(replica, 'GET', '/schedule')).text) as Array<{
          kind: string;
          fate: string;
          node: string;
        }>;
        return schedule.some((op) => op.kind === 'restart' && op.fate === 'scheduled' && op.node === replica.name);
      },
      { timeoutMs: 10_000, description: 'the scheduled restart in the log' },
    );
    await replica.killAgent();
    replica.start();
    await waitFor(
      async () =>
        ((await replica.status())?.scheduled_restart as { schedule?: string } | undefined)?.schedule === later,
      {
        timeoutMs: 20_000,
        description: 'the restarted agent shows the scheduled restart',
      },
    );
    expect((await replica.status())?.scheduled_restart).toMatchObject({ role: 'replica' });
    expect(await call(replica, 'DELETE', '/restart')).toMatchObject({ status: 200 });
  });
});
