import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { sql } from '../helpers/sql';

/**
 * The health-check matrix on a real 4-node cluster (real etcd, real PostgreSQL 15, each agent a
 * separate `stator` process): every health path of reference-behavior 1.3, plus `/stator`,
 * `/metrics`, `/cluster`, `/history` and `/config`, with GET, HEAD and OPTIONS, on four kinds of
 * node: the leader (node1), a plain streaming replica with a custom tag (node2), a noloadbalance
 * replica (node3) and a nofailover replica (node4).
 *
 * Expected codes are Patroni 3.0.2's (shared/oracle/patroni-3.0.2: status-matrix.md, tags.jsonl,
 * lag.jsonl, pause.jsonl), except for the deliberate deviations of docs/deviations.md and
 * shared/design/architecture.md, each marked DEVIATION below:
 * - exact paths (a trailing slash tolerated): `/xprimaryx`, `/primary/extra`, `/PRIMARY`, `/nope`...
 *   → 404 JSON where Patroni matches substrings (200 or 503) or answers 503;
 * - HEAD and OPTIONS give the code GET gives, where Patroni answers 503 to HEAD/OPTIONS on
 *   `/liveness`, `/readiness`, `/metrics`, `/cluster`, `/history`, `/config` (and `/patroni`);
 * - an unparsable `lag` (`abc`, `-1`, `1XB`, empty) → 400 JSON naming `lag`, where Patroni means
 *   "no limit" (or, for `-1`, a negative limit).
 */
const TTL = 10;
const LOOP_WAIT = 2;
const RETRY_TIMEOUT = 4;
const MAXIMUM_LAG_ON_FAILOVER = 1024 * 1024; // set by LocalCluster in bootstrap.dcs

jest.setTimeout(150_000);

type Kind = 'leader' | 'replica' | 'noloadbalance' | 'nofailover';
const KINDS: Array<{ name: string; kind: Kind; label: string; tags: Record<string, unknown> | undefined }> = [
  { name: 'node1', kind: 'leader', label: 'node1 (leader)', tags: undefined },
  { name: 'node2', kind: 'replica', label: 'node2 (replica, zone=a)', tags: { zone: 'a' } },
  { name: 'node3', kind: 'noloadbalance', label: 'node3 (noloadbalance replica)', tags: { noloadbalance: true } },
  { name: 'node4', kind: 'nofailover', label: 'node4 (nofailover replica)', tags: { nofailover: true } },
];
const METHODS = ['GET', 'HEAD', 'OPTIONS'] as const;
type Method = (typeof METHODS)[number];

let cluster: LocalCluster;
let baseDir: string;
const timings: Record<string, number> = {};
const startedAt = Date.now();

interface Answer {
  status: number;
  contentType: string;
  text: string;
}

async function call(node: LocalNode, method: string, path: string, body?: unknown): Promise<Answer> {
  const response = await fetch(node.apiUrl + path, {
    method,
    signal: AbortSignal.timeout(body === undefined ? 3000 : 30_000),
    ...(body === undefined ? {} : { headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return {
    status: response.status,
    contentType: response.headers.get('content-type') ?? '',
    text: await response.text(),
  };
}

/** A JSON document as it came over the wire: the checks below read it field by field and report what differs. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- typing every document served would restate the API here
type WireJson = any;

async function statusOf(node: LocalNode): Promise<WireJson> {
  const answer = await call(node, 'GET', '/stator');
  if (answer.status !== 200) throw new Error(`GET /stator on ${node.name}: ${answer.status}`);
  return JSON.parse(answer.text);
}

function parseJson(text: string): WireJson {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * What a cell's answer must look like besides its code:
 * - `document`: GET carries the node status document (health paths, `/stator`), HEAD/OPTIONS nothing;
 * - `none`: no body with any method (`/liveness`, `/readiness`);
 * - `metrics`, `cluster`, `history`, `config`: GET carries that read, HEAD/OPTIONS nothing;
 * - `error`: GET and OPTIONS carry a JSON error `{error, message, statusCode}` (message containing
 *   `mentions` when given), HEAD nothing.
 */
type BodyKind = 'document' | 'none' | 'metrics' | 'cluster' | 'history' | 'config' | 'error';

interface Row {
  path: string;
  /** Codes for leader, replica, noloadbalance, nofailover; the same for GET, HEAD and OPTIONS. */
  codes: [number, number, number, number];
  body: BodyKind;
  mentions?: string;
  /** Where the expectation comes from. */
  source: string;
}

const row = (path: string, codes: Row['codes'], body: BodyKind, source: string, mentions?: string): Row => ({
  path,
  codes,
  body,
  source,
  mentions,
});
const H = 'status-matrix.md';
const T = 'tags.jsonl';
const EXACT = 'DEVIATION exact paths (docs/deviations.md)';
const VERBS = 'DEVIATION HEAD/OPTIONS = GET (docs/deviations.md)';
const LAG = 'DEVIATION unparsable lag → 400 (docs/deviations.md)';
const NOLB = 'noloadbalance tag: tags-002..004, 015, 016 (503), tags-005/006 (health, readiness 200)';
const NOFO = 'nofailover tag: tags-018..023, 031, 032 (200)';

//                                                 leader replica noLB noFO
const ROWS: Row[] = [
  row('/', [200, 503, 503, 503], 'document', H),
  row('/primary', [200, 503, 503, 503], 'document', H),
  row('/primary/', [200, 503, 503, 503], 'document', `${H} (trailing slash tolerated)`),
  row('/master', [200, 503, 503, 503], 'document', H),
  row('/read-write', [200, 503, 503, 503], 'document', H),
  row('/standby-leader', [503, 503, 503, 503], 'document', H),
  row('/standby_leader', [503, 503, 503, 503], 'document', H),
  row('/leader', [200, 503, 503, 503], 'document', H),
  row('/replica', [503, 200, 503, 200], 'document', `${H}; ${NOLB}; ${NOFO}`),
  row('/replica?lag=0', [503, 200, 503, 200], 'document', H),
  row('/replica?lag=1048576', [503, 200, 503, 200], 'document', H),
  row(
    '/replica?lag=64kB',
    [503, 200, 503, 200],
    'document',
    `${H} (lag=1kB there; 64kB so idle-WAL noise cannot flake)`,
  ),
  row('/replica?lag=10MB', [503, 200, 503, 200], 'document', H),
  row('/replica?lag=10%20MB', [503, 200, 503, 200], 'document', `${H} (space before the unit)`),
  row('/replica?lag=1GB', [503, 200, 503, 200], 'document', 'spec 1.3 lag units'),
  row('/replica?lag=0x100000', [503, 200, 503, 200], 'document', 'spec 1.3 lag parsing (strtol: 0x hex)'),
  row('/replica?lag=1e6', [503, 200, 503, 200], 'document', 'spec 1.3 lag parsing (strtod: exponent)'),
  row('/replica?lag=1.5MB', [503, 200, 503, 200], 'document', 'spec 1.3 lag parsing (float with a unit)'),
  row('/replica?lag=0&lag=10MB', [503, 200, 503, 200], 'document', `${H} (first value counts)`),
  row('/replica?replication_state=streaming', [503, 200, 503, 200], 'document', 'spec 1.3 replicaOK'),
  row('/replica?replication_state=in%20archive%20recovery', [503, 503, 503, 503], 'document', 'spec 1.3 replicaOK'),
  row('/replica?tag_zone=a', [503, 200, 503, 503], 'document', `${T} tags-023/024 (custom tag; missing tag fails)`),
  row('/replica?tag_zone=b', [503, 503, 503, 503], 'document', `${T} tags-024`),
  row('/replica?tag_zone=a&tag_zone=b', [503, 200, 503, 503], 'document', 'spec 1.3 tag filter (first value only)'),
  row('/replica?tag_nofailover=true', [503, 503, 503, 200], 'document', `${T} tags-009, 025`),
  row('/replica?tag_nofailover=True', [503, 503, 503, 503], 'document', `${T} tags-010, 026 (str(v).lower())`),
  row('/replica?tag_nofailover=false', [503, 503, 503, 503], 'document', `${H}; ${T} tags-030`),
  row('/replica?tag_noloadbalance=true', [503, 503, 503, 503], 'document', `${T} tags-011, 027`),
  row(
    '/replica?tag_zone=a&tag_nofailover=true',
    [503, 503, 503, 503],
    'document',
    `${T} tags-029/030 (every tag must match)`,
  ),
  row('/replica?tag_nofailover=true&tag_zone=a', [503, 503, 503, 503], 'document', `${T} tags-029/030`),
  row('/replica?tag_foo=bar', [503, 503, 503, 503], 'document', `${H}; ${T} tags-007, 033`),
  row('/primary?tag_foo=bar', [200, 503, 503, 503], 'document', `${H}; ${T} tags-035 (tags ignored)`),
  row('/leader?tag_foo=bar', [200, 503, 503, 503], 'document', `${H} (tags ignored)`),
  row('/read-only', [200, 200, 503, 200], 'document', `${H}; ${T} tags-003, 019`),
  row('/read-only?lag=10MB', [200, 200, 503, 200], 'document', H),
  row(
    '/read-only?tag_zone=a',
    [503, 200, 503, 503],
    'document',
    `${T} tags-012, 028, 034 (the tag filter applies to the leader too)`,
  ),
  row('/synchronous', [503, 503, 503, 503], 'document', H),
  row('/sync', [503, 503, 503, 503], 'document', H),
  row('/read-only-sync', [200, 503, 503, 503], 'document', H),
  row('/read-only-synchronous', [200, 503, 503, 503], 'document', H),
  row('/asynchronous', [503, 200, 503, 200], 'document', `${H}; ${T} tags-004, 020`),
  row('/async', [503, 200, 503, 200], 'document', `${H}; ${T} tags-004, 020`),
  row('/async?lag=64kB', [503, 200, 503, 200], 'document', `${H} (1kB there)`),
  row('/async?lag=10MB', [503, 200, 503, 200], 'document', H),
  row('/health', [200, 200, 200, 200], 'document', `${H}; ${T} tags-005, 021`),
  row('/health?tag_foo=bar', [503, 503, 503, 503], 'document', H),
  row('/liveness', [200, 200, 200, 200], 'none', `${H} (GET); ${VERBS}`),
  row('/readiness', [200, 200, 200, 200], 'none', `${H} (GET); ${T} tags-006, 022; ${VERBS}`),
  row('/stator', [200, 200, 200, 200], 'document', `${H} (/patroni, GET); ${VERBS}`),
  row('/metrics', [200, 200, 200, 200], 'metrics', `${H} (GET); ${VERBS}`),
  row('/metrics?x=1', [200, 200, 200, 200], 'metrics', `${H} (GET); ${VERBS}`),
  row('/cluster', [200, 200, 200, 200], 'cluster', `${H} (GET); ${VERBS}`),
  row('/history', [200, 200, 200, 200], 'history', `${H} (GET); ${VERBS}`),
  row('/config', [200, 200, 200, 200], 'config', `${H} (GET); ${VERBS}`),
  // DEVIATION: exact paths. Patroni: /xprimaryx and /primary/extra are /primary (200 on the leader),
  // /replica/extra is /replica, /cluster/x and /liveness/x are 200, /PRIMARY and /nope are 503.
  row('/xprimaryx', [404, 404, 404, 404], 'error', EXACT),
  row('/primary/extra', [404, 404, 404, 404], 'error', EXACT),
  row('/replica/extra', [404, 404, 404, 404], 'error', EXACT),
  row('/PRIMARY', [404, 404, 404, 404], 'error', EXACT),
  row('/nope', [404, 404, 404, 404], 'error', EXACT),
  row('/nope/deeper', [404, 404, 404, 404], 'error', EXACT),
  row('/cluster/x', [404, 404, 404, 404], 'error', EXACT),
  row('/liveness/x', [404, 404, 404, 404], 'error', EXACT),
  // DEVIATION: unparsable lag. Patroni: no limit (200 on a replica), or 503 for -1.
  row('/replica?lag=abc', [400, 400, 400, 400], 'error', LAG, 'lag'),
  row('/replica?lag=-1', [400, 400, 400, 400], 'error', LAG, 'lag'),
  row('/replica?lag=1XB', [400, 400, 400, 400], 'error', LAG, 'lag'),
  row('/replica?lag=', [400, 400, 400, 400], 'error', LAG, 'lag'),
  row('/async?lag=abc', [400, 400, 400, 400], 'error', LAG, 'lag'),
  row('/readiness?lag=abc', [400, 400, 400, 400], 'error', LAG, 'lag'),
];

/** Problems of one answer besides its code, in words naming path, node and method. */
function bodyProblems(r: Row, node: (typeof KINDS)[number], method: Method, answer: Answer): string[] {
  const where = `${method} ${r.path} on ${node.label}`;
  const problems: string[] = [];
  const fail = (what: string) => problems.push(`${where}: ${what}`);
  if (method === 'HEAD' || (method === 'OPTIONS' && r.body !== 'error') || r.body === 'none') {
    if (answer.text !== '') fail(`expected no body, got ${JSON.stringify(answer.text.slice(0, 120))}`);
    return problems;
  }
  if (r.body === 'metrics') {
    if (!answer.contentType.startsWith('text/plain')) fail(`expected text/plain, got ${answer.contentType}`);
    const primary = node.kind === 'leader' ? 1 : 0;
    if (!answer.text.includes(`stator_primary{scope="${cluster.scope}",name="${node.name}"} ${primary}\n`))
      fail(`no stator_primary ${primary} sample`);
    if (!answer.text.includes(`stator_replica{scope="${cluster.scope}",name="${node.name}"} ${1 - primary}\n`))
      fail(`no stator_replica ${1 - primary} sample`);
    return problems;
  }
  if (!answer.contentType.startsWith('application/json')) fail(`expected application/json, got ${answer.contentType}`);
  const body = parseJson(answer.text);
  if (body === undefined) {
    fail(`body is not JSON: ${JSON.stringify(answer.text.slice(0, 120))}`);
    return problems;
  }
  switch (r.body) {
    case 'error':
      if (body.statusCode !== answer.status || typeof body.error !== 'string' || typeof body.message !== 'string')
        fail(`not a JSON error: ${answer.text}`);
      if (r.mentions && !String(body.message).includes(r.mentions))
        fail(`error does not name "${r.mentions}": ${answer.text}`);
      break;
    case 'cluster': {
      const members = (body.members ?? []).map((m: { name: string; role: string }) => `${m.name}:${m.role}`);
      const expected = ['node1:leader', 'node2:replica', 'node3:replica', 'node4:replica'];
      if (JSON.stringify(members) !== JSON.stringify(expected))
        fail(`members ${JSON.stringify(members)}, expected ${JSON.stringify(expected)}`);
      break;
    }
    case 'history':
      if (!Array.isArray(body)) fail(`expected a JSON array, got ${answer.text}`);
      break;
    case 'config':
      if (body.ttl !== TTL || body.loop_wait !== LOOP_WAIT || body.retry_timeout !== RETRY_TIMEOUT)
        fail(`unexpected config ${answer.text}`);
      break;
    case 'document':
      problems.push(...documentProblems(body, node).map((p) => `${where}: ${p}`));
      break;
  }
  return problems;
}

/** The status document of a healthy node of `node`'s kind. */
function documentProblems(doc: WireJson, node: (typeof KINDS)[number]): string[] {
  const problems: string[] = [];
  if (doc.state !== 'running') problems.push(`state ${doc.state}, expected running`);
  const leader = node.kind === 'leader';
  if (doc.role !== (leader ? 'primary' : 'replica'))
    problems.push(`role ${doc.role}, expected ${leader ? 'primary' : 'replica'}`);
  const xlog = doc.xlog ?? {};
  const xlogKeys = Object.keys(xlog).sort().join(',');
  if (leader) {
    if (xlogKeys !== 'location' || !(xlog.location > 0))
      problems.push(`xlog ${JSON.stringify(xlog)}, expected {location}`);
    if (doc.replication_state !== undefined) problems.push(`replication_state ${doc.replication_state} on a primary`);
  } else {
    if (
      xlogKeys !== 'paused,received_location,replayed_location,replayed_timestamp' ||
      xlog.paused !== false ||
      !(xlog.replayed_location > 0)
    ) {
      problems.push(
        `xlog ${JSON.stringify(xlog)}, expected {received_location, replayed_location, replayed_timestamp, paused: false}`,
      );
    }
    if (doc.replication_state !== 'streaming')
      problems.push(`replication_state ${doc.replication_state}, expected streaming`);
  }
  if (JSON.stringify(doc.tags) !== JSON.stringify(node.tags))
    problems.push(`tags ${JSON.stringify(doc.tags)}, expected ${JSON.stringify(node.tags)}`);
  if (doc.pause !== undefined) problems.push(`pause ${doc.pause} in a running cluster`);
  if (doc.cluster_unlocked !== undefined) problems.push(`cluster_unlocked ${doc.cluster_unlocked}`);
  if (doc.stator?.name !== node.name || doc.stator?.scope !== cluster.scope)
    problems.push(`stator ${JSON.stringify(doc.stator)}`);
  return problems;
}

/**
 * Waits until `names` run as replicas streaming from the leader, read from their status documents
 * (`LocalCluster.waitForStreaming` asks `/replica`, which a noloadbalance node never passes).
 */
async function waitForStreaming(names: string[], timeoutMs: number): Promise<void> {
  await waitFor(
    async () =>
      (await Promise.all(names.map((name) => statusOf(cluster.node(name)).catch(() => null)))).every(
        (doc) => doc?.state === 'running' && doc.role === 'replica' && doc.replication_state === 'streaming',
      ),
    { timeoutMs, intervalMs: 200, description: `${names.join(', ')} streaming` },
  );
}

beforeAll(async () => {
  baseDir = tmpDir('stator-health-');
  cluster = await LocalCluster.start({
    nodes: 4,
    baseDir,
    ttl: TTL,
    loopWait: LOOP_WAIT,
    retryTimeout: RETRY_TIMEOUT,
    tags: { 2: { zone: 'a' }, 3: { noloadbalance: true }, 4: { nofailover: true } },
  });
  const others = (leader: string) => cluster.nodes.filter((n) => n.name !== leader).map((n) => n.name);
  const leader = await cluster.waitForLeader(60_000);
  await waitForStreaming(others(leader.name), 60_000);
  timings.bootstrapMs = Date.now() - startedAt;

  if (leader.name !== 'node1') {
    const switchedAt = Date.now();
    const answer = await call(leader, 'POST', '/switchover', { leader: leader.name, candidate: 'node1' });
    expect({ status: answer.status, text: answer.text }).toEqual({
      status: 200,
      text: expect.stringContaining('node1'),
    });
    await waitFor(async () => (await cluster.node('node1').healthCode('/primary')) === 200, {
      timeoutMs: 30_000,
      description: 'node1 on /primary',
    });
    timings.switchoverMs = Date.now() - switchedAt;
  }
  expect((await cluster.waitForLeader(10_000)).name).toBe('node1');
  await waitForStreaming(others('node1'), 60_000);
  // Every replica has caught up with the leader's published position (readiness within maximum_lag_on_failover).
  await waitFor(
    async () => (await Promise.all(cluster.nodes.map((n) => n.healthCode('/readiness')))).every((c) => c === 200),
    {
      timeoutMs: 30_000,
      description: 'every node ready',
    },
  );
  timings.readyMs = Date.now() - startedAt;
});

afterAll(async () => {
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
  else if (baseDir) console.log(`kept ${baseDir}`);
  timings.totalMs = Date.now() - startedAt;
  console.log(`health-matrix timings: ${JSON.stringify(timings)}`);
});

describe('health matrix of a healthy 4-node cluster (leader, replica, noloadbalance, nofailover) × GET/HEAD/OPTIONS', () => {
  it.each(ROWS)('$path → $codes ($source)', async (r) => {
    const cells = KINDS.flatMap((node, index) => METHODS.map((method) => ({ node, method, expected: r.codes[index] })));
    const check = async () => {
      const answers = await Promise.all(cells.map((cell) => call(cluster.node(cell.node.name), cell.method, r.path)));
      const problems: string[] = [];
      cells.forEach((cell, i) => {
        const answer = answers[i];
        if (answer.status !== cell.expected) {
          problems.push(
            `${cell.method} ${r.path} on ${cell.node.label}: expected ${cell.expected}, got ${answer.status} ${answer.text.slice(0, 160)}`,
          );
          return;
        }
        problems.push(...bodyProblems(r, cell.node, cell.method, answer));
      });
      return problems;
    };
    let problems = await check();
    // lag=0 holds only while the leader writes no WAL: its periodic records (a standby snapshot every 15 s, checkpoints)
    // put every replica a few bytes behind until its next reading, a second later. Such a row is read again, up to 3 s.
    const deadline = Date.now() + 3000;
    while (problems.length > 0 && /[?&]lag=0(&|$)/.test(r.path) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      problems = await check();
    }
    expect(problems).toEqual([]);
  });
});

describe('dynamic situations', () => {
  it('a replica with replay paused and lagging more than 1 MB fails the lag-bounded checks and readiness, and recovers on resume', async () => {
    const leader = cluster.node('node1');
    const replica = cluster.node('node2');
    const began = Date.now();
    await sql(leader, 'CREATE TABLE IF NOT EXISTS lag_probe(v text)');
    await sql(replica, 'SELECT pg_wal_replay_pause()');
    try {
      await waitFor(async () => (await statusOf(replica)).xlog?.paused === true, {
        timeoutMs: 15_000,
        description: 'node2 reports xlog.paused',
      });
      await sql(leader, "INSERT INTO lag_probe SELECT repeat('x', 1000) FROM generate_series(1, 5000)");
      const seen = await waitFor(
        async () => {
          const [primaryDoc, replicaDoc] = await Promise.all([statusOf(leader), statusOf(replica)]);
          const behindLeader = primaryDoc.xlog.location - replicaDoc.xlog.replayed_location;
          const behindReceived = replicaDoc.xlog.received_location - replicaDoc.xlog.replayed_location;
          return replicaDoc.xlog.paused === true &&
            behindLeader > MAXIMUM_LAG_ON_FAILOVER &&
            behindReceived > MAXIMUM_LAG_ON_FAILOVER
            ? { behindLeader, replicaDoc }
            : null;
        },
        { timeoutMs: 20_000, intervalMs: 200, description: 'node2 paused and more than 1 MB behind node1' },
      );
      expect(seen.replicaDoc).toMatchObject({
        state: 'running',
        role: 'replica',
        replication_state: 'streaming',
        tags: { zone: 'a' },
      });

      const expectations: Array<[string, number]> = [
        ['/replica?lag=1MB', 503],
        ['/replica?lag=1048576', 503],
        ['/replica?lag=0x100000', 503],
        ['/replica?lag=1e6', 503],
        ['/replica?lag=1e9', 200],
        ['/replica?lag=1GB', 200],
        ['/replica', 200],
        ['/replica?tag_zone=a', 200],
        ['/read-only?lag=1MB', 503],
        ['/read-only?lag=1GB', 200],
        ['/async?lag=1MB', 503],
        ['/async?lag=1GB', 200],
        ['/async', 200],
        ['/readiness', 503], // lag above maximum_lag_on_failover (1 MB)
        ['/readiness?lag=1GB', 200],
        ['/health', 200],
        ['/health?lag=0', 200], // lag-012
        ['/liveness', 200],
        ['/primary', 503],
      ];
      const problems: string[] = [];
      for (const [path, expected] of expectations) {
        for (const method of METHODS) {
          const answer = await call(replica, method, path);
          if (answer.status !== expected)
            problems.push(
              `${method} ${path} on node2 (paused, ${seen.behindLeader} bytes behind): expected ${expected}, got ${answer.status}`,
            );
        }
      }
      // node4 replays the same WAL: once it has caught up with the burst (a loop at most), it passes
      // the same bound node2 fails.
      await waitFor(async () => (await cluster.node('node4').healthCode('/replica?lag=1MB')) === 200, {
        timeoutMs: 10_000,
        description: 'GET /replica?lag=1MB 200 on node4 (not paused) while node2 is paused',
      });
      expect((await statusOf(replica)).xlog.paused).toBe(true);
      expect(problems).toEqual([]);
    } finally {
      await sql(replica, 'SELECT pg_wal_replay_resume()');
    }
    await waitFor(
      async () =>
        (await replica.healthCode('/readiness')) === 200 && (await replica.healthCode('/replica?lag=1MB')) === 200,
      {
        timeoutMs: 20_000,
        description: 'node2 ready again after pg_wal_replay_resume()',
      },
    );
    expect((await statusOf(replica)).xlog.paused).toBe(false);
    timings.lagScenarioMs = Date.now() - began;
  });

  it('a paused cluster: pause in every status document and metric, liveness 200 everywhere, the leader still primary; resumes on pause null', async () => {
    const leader = cluster.node('node1');
    const began = Date.now();
    const paused = await call(leader, 'PATCH', '/config', { pause: true });
    expect(paused.status).toBe(200);
    expect(paused.contentType).toMatch(/^application\/json/);
    expect(parseJson(paused.text)).toMatchObject({ pause: true, ttl: TTL });
    try {
      await waitFor(async () => (await Promise.all(cluster.nodes.map(statusOf))).every((doc) => doc.pause === true), {
        timeoutMs: 15_000,
        description: 'pause: true in every node status document',
      });

      const problems: string[] = [];
      const expect200 = async (node: LocalNode, method: Method, path: string, expected: number) => {
        const answer = await call(node, method, path);
        if (answer.status !== expected)
          problems.push(
            `${method} ${path} on ${node.name} (paused cluster): expected ${expected}, got ${answer.status}`,
          );
        return answer;
      };
      for (const node of cluster.nodes) {
        for (const method of METHODS) await expect200(node, method, '/liveness', 200); // pause-008, 018
        await expect200(node, 'GET', '/health', 200); // pause-007, 017
        const metrics = await expect200(node, 'GET', '/metrics', 200); // pause-011, 021
        if (!metrics.text.includes(`stator_is_paused{scope="${cluster.scope}",name="${node.name}"} 1\n`)) {
          problems.push(`GET /metrics on ${node.name} (paused cluster): no stator_is_paused 1 sample`);
        }
      }
      for (const method of METHODS) {
        await expect200(leader, method, '/primary', 200); // pause-003
        await expect200(leader, method, '/leader', 200); // pause-006
        await expect200(leader, method, '/readiness', 200); // pause-009
        await expect200(leader, method, '/replica', 503); // pause-004
        await expect200(cluster.node('node2'), method, '/primary', 503); // pause-013
        await expect200(cluster.node('node2'), method, '/replica', 200); // pause-014
        await expect200(cluster.node('node2'), method, '/readiness', 200); // pause-019
        await expect200(cluster.node('node3'), method, '/replica', 503);
        await expect200(cluster.node('node4'), method, '/replica', 200);
      }
      const primaryDoc = parseJson((await call(leader, 'GET', '/primary')).text);
      expect(primaryDoc).toMatchObject({ state: 'running', role: 'primary', pause: true });
      const clusterDoc = parseJson((await call(leader, 'GET', '/cluster')).text);
      expect(clusterDoc).toMatchObject({ pause: true }); // pause-022
      const configDoc = parseJson((await call(leader, 'GET', '/config')).text);
      expect(configDoc).toMatchObject({ pause: true }); // pause-023
      expect(problems).toEqual([]);
    } finally {
      const resumed = await call(leader, 'PATCH', '/config', { pause: null });
      expect(resumed.status).toBe(200);
      expect(parseJson(resumed.text)).not.toHaveProperty('pause'); // pause-039
    }
    await waitFor(
      async () => (await Promise.all(cluster.nodes.map(statusOf))).every((doc) => doc.pause === undefined),
      {
        timeoutMs: 15_000,
        description: 'pause gone from every node status document',
      },
    );
    expect(await leader.healthCode('/primary')).toBe(200);
    timings.pauseScenarioMs = Date.now() - began;
  });
});
