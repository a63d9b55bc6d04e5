import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';
import { waitFor } from '../../scripts/lib/wait-for';
import { answerChecker, documentedOperations, METHODS, validateOpenApi } from '../helpers/openapi-check';

/**
 * Issue 14 items 4 and 5 on a real 2-node cluster: each node's self-diagnosis, and its OpenAPI
 * document checked against the OpenAPI 3.1 schema, against the routes the running node serves,
 * and against its real answers.
 */
jest.setTimeout(120_000);

let cluster: LocalCluster;
let baseDir: string;
let leader: LocalNode;
let replica: LocalNode;

interface Answer {
  status: number;
  type: string;
  body: string;
  allow: string | null;
}

async function call(node: LocalNode, method: string, path: string, body?: string): Promise<Answer> {
  const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
  const response = await fetch(node.apiUrl + path, { method, headers, body, signal: AbortSignal.timeout(5_000) });
  return {
    status: response.status,
    type: response.headers.get('content-type') ?? '',
    body: await response.text(),
    allow: response.headers.get('allow'),
  };
}

beforeAll(async () => {
  baseDir = tmpDir('stator-openapi-');
  cluster = await LocalCluster.start({ nodes: 2, baseDir, ttl: 10, loopWait: 2, retryTimeout: 4 });
  leader = await cluster.waitForLeader(30_000);
  replica = cluster.nodes.find((node) => node !== leader) as LocalNode;
  await cluster.waitForStreaming([replica.name], 60_000);
});

afterAll(async () => {
  await cluster?.stop();
  if (baseDir && !process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
});

describe('GET /stator/diagnostics', () => {
  it('on the leader: every indicator up, the lease held, the fence armed ahead of its expiry', async () => {
    // The first cycles of a new cluster may still be settling.
    const answer = await waitFor(
      async () => {
        const reply = await call(leader, 'GET', '/stator/diagnostics');
        return reply.status === 200 ? reply : null;
      },
      { timeoutMs: 20_000, intervalMs: 200, description: 'the leader diagnosing itself healthy' },
    );
    const body = JSON.parse(answer.body);
    writeFileSync(
      join(__dirname, '..', '..', 'test-artifacts', 'diagnostics-leader.json'),
      `${JSON.stringify(body, null, 2)}\n`,
    );

    expect(body.status).toBe('ok');
    expect(Object.keys(body.details)).toEqual(['etcd', 'postgres', 'fence', 'events', 'ha_cycle']);
    const { etcd, postgres, fence, events, ha_cycle } = body.details;
    expect(etcd).toMatchObject({ status: 'up', leader: true });
    expect(etcd.lease_left_ms).toBeGreaterThan(0);
    expect(etcd.lease_left_ms).toBeLessThanOrEqual(10_000);
    expect(etcd.last_read_age_ms).toBeLessThan(10_000);
    expect(postgres).toMatchObject({ status: 'up', state: 'running', role: 'primary' });
    expect(postgres.sample_age_ms).toBeLessThan(5_000);
    expect(fence).toMatchObject({ status: 'up', connected: true, armed: true, required: true });
    expect(fence.left_ms).toBeGreaterThan(0);
    // The fence stops PostgreSQL before the lease can expire.
    expect(fence.left_ms).toBeLessThan(etcd.lease_left_ms);
    expect(events).toMatchObject({ status: 'up', store_down_since: null });
    expect(ha_cycle).toMatchObject({ status: 'up', loop_wait_ms: 2_000 });
    expect(ha_cycle.last_cycle_age_ms).toBeLessThan(ha_cycle.max_cycle_age_ms);
  });

  it('on the replica: every indicator up, no lease, the fence disarmed', async () => {
    const answer = await call(replica, 'GET', '/stator/diagnostics');
    expect(answer.status).toBe(200);
    const { etcd, postgres, fence } = JSON.parse(answer.body).details;
    expect(etcd).toMatchObject({ status: 'up', leader: false, lease_left_ms: null });
    expect(postgres).toMatchObject({ status: 'up', role: 'replica' });
    expect(fence).toMatchObject({ status: 'up', connected: true, armed: false, required: false, left_ms: null });
  });
});

describe('GET /openapi.json', () => {
  let document: Record<string, unknown>;

  beforeAll(async () => {
    const answer = await call(leader, 'GET', '/openapi.json');
    expect(answer.status).toBe(200);
    document = JSON.parse(answer.body);
  });

  /** src/api/openapi-decorators.ts: the agent serves the file `npm run build` generated. */
  it('is the generated file, and the agent never loads @nestjs/swagger, lodash or js-yaml', () => {
    const dist = resolve(__dirname, '..', '..', 'dist', 'src');
    expect(JSON.parse(readFileSync(join(dist, 'api', 'openapi', 'openapi-stator.json'), 'utf8'))).toEqual(document);
    const { STATOR_OPENAPI_DECORATORS: _live, ...agentEnv } = process.env;
    const load = [join(dist, 'cli', 'main.js'), join(dist, 'app.module.js')].map(
      (file) => `require(${JSON.stringify(file)});`,
    );
    const loaded: string[] = JSON.parse(
      execFileSync(
        process.execPath,
        ['-e', `${load.join('')} console.log(JSON.stringify(Object.keys(require.cache)))`],
        {
          env: agentEnv,
          encoding: 'utf8',
          timeout: 30_000,
        },
      ),
    );
    expect(loaded.some((file) => file.endsWith(join('api', 'openapi', 'openapi.controller.js')))).toBe(true);
    expect(loaded.filter((file) => /node_modules\/(@nestjs\/swagger|lodash|js-yaml)\//.test(file))).toEqual([]);
  });

  it('is a valid OpenAPI 3.1 document, the same on every node', async () => {
    const result = await validateOpenApi(document);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(document.openapi).toBe('3.1.0');
    expect(JSON.parse((await call(replica, 'GET', '/openapi.json')).body)).toEqual(document);
  });

  /**
   * A request each operation's route answers without acting: unsafe methods get a JSON object with a key no
   * endpoint knows (refused, but only by the route: a body the parser refuses would be refused on any path,
   * routed or not; POST /reload alone accepts it, and reloads). The live event stream is asked with HEAD.
   */
  const probe = (method: string, path: string) => {
    const url = path.replace('{name}', 'ui.css').replace('{file}', 'role.svg');
    if (method === 'GET' && path === '/events/stream') return call(leader, 'HEAD', url);
    return call(leader, method, url, ['POST', 'PUT', 'PATCH'].includes(method) ? '{"openapi_probe":1}' : undefined);
  };

  it('describes only routes the node serves, and every method each of its paths serves', async () => {
    const operations = documentedOperations(document);
    expect(operations.length).toBeGreaterThan(80);
    for (const operation of operations) {
      const [method, path] = operation.split(' ');
      const answer = await probe(method, path);
      expect({
        operation,
        unrouted: answer.body.includes('no endpoint at'),
        notAllowed: answer.status === 405,
      }).toEqual({ operation, unrouted: false, notAllowed: false });
    }
    // The node's own list of the methods of each path (405's Allow header) is the document's. Paths with a
    // parameter are left out: the 405 answer looks the URL up as a route pattern, so they answer 404 there.
    for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, unknown>>)) {
      const documented = METHODS.filter((method) => item[method]).map((method) => method.toUpperCase());
      const unserved = ['DELETE', 'PUT', 'PATCH', 'POST', 'GET'].find((method) => !documented.includes(method));
      if (!unserved || path.includes('{')) continue;
      const answer = await call(leader, unserved, path);
      expect({ path, status: answer.status }).toEqual({ path, status: 405 });
      expect({ path, allow: answer.allow?.split(', ').sort() }).toEqual({ path, allow: [...documented].sort() });
    }
  });

  it('matches real answers of the leader and the replica', async () => {
    const check = answerChecker(document);
    const reads = [
      '/stator',
      '/stator/diagnostics',
      '/cluster',
      '/history',
      '/config',
      '/schedule',
      '/metrics',
      '/events?limit=5',
      '/primary',
      '/replica',
      '/read-only',
      '/liveness',
      '/openapi.json',
    ];
    const problems: string[] = [];
    for (const node of [leader, replica]) {
      for (const url of reads) {
        const answer = await call(node, 'GET', url);
        problems.push(...check(url.split('?')[0], 'GET', answer));
      }
      for (const [method, url, body] of [
        ['POST', '/switchover', '{"candidate":"nobody"}'],
        ['POST', '/restart', '{"timeout":"soon"}'],
        ['PATCH', '/config', '{"nonsense":1}'],
        ['POST', '/reload', '[1]'],
      ]) {
        problems.push(...check(url, method, await call(node, method, url, body)));
      }
    }
    expect(problems).toEqual([]);
  });
});
