import { readFileSync } from 'node:fs';
import * as http from 'node:http';
import { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Body, Controller, HttpException, Module, Post } from '@nestjs/common';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import { ApiModule } from '../../../src/api/api.module';
import { createHttpApp } from '../../../src/api/http-server';
import { buildMetrics } from '../../../src/api/metrics';
import { ApiIdentity } from '../../../src/api/status-document';
import { NodeView } from '../../../src/ha/node-view';
import { leaderView, NOW, replicaView } from './node-view-fixtures';

const ORACLE = '/work/shared/oracle/patroni-3.0.2';
const IDENTITY: ApiIdentity = { scope: 'demo', version: '0.1.0', productKey: 'stator' };

/** Test-only routes: a JSON POST endpoint, and one answering a plain-text message as the operation endpoints do. */
@Controller('test')
class TestOperationsController {
  @Post('echo')
  echo(@Body() body: unknown): { received: unknown } {
    return { received: body ?? null };
  }

  @Post('scheduled')
  scheduled(): never {
    throw new HttpException('Switchover scheduled', 202);
  }
}

let view: NodeView;

@Module({
  imports: [ApiModule.register({ identity: IDENTITY, source: { view: () => view }, clock: { now: () => NOW } })],
  controllers: [TestOperationsController],
})
class TestApiModule {}

let app: NestFastifyApplication;
let fastify: FastifyInstance;

beforeAll(async () => {
  app = await createHttpApp({ module: TestApiModule });
  await app.init();
  fastify = app.getHttpAdapter().getInstance();
});

afterAll(async () => {
  await app.close();
});

beforeEach(() => {
  view = leaderView();
});

type Method = 'GET' | 'HEAD' | 'OPTIONS' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

function request(
  method: Method,
  url: string,
  options: { headers?: Record<string, string>; payload?: string | Buffer } = {},
) {
  return fastify.inject({ method, url, headers: options.headers, payload: options.payload });
}

describe('GET /metrics', () => {
  it('answers the exposition text as text/plain version 0.0.4 with a Content-Length', async () => {
    const answer = await request('GET', '/metrics');

    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(answer.headers['content-length']).toBe(String(Buffer.byteLength(answer.body)));
    expect(answer.body).toBe(buildMetrics(view, IDENTITY, NOW));
  });

  it.each(['HEAD', 'OPTIONS'] as Method[])('answers %s with the same code and no body', async (method) => {
    const answer = await request(method, '/metrics');

    expect(answer.statusCode).toBe(200);
    expect(answer.body).toBe('');
  });
});

describe('GET /cluster', () => {
  it('answers the cluster document: members sorted by name, positions and lag of the replicas, scope', async () => {
    const answer = await request('GET', '/cluster');

    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-type']).toMatch(/^application\/json/);
    expect(answer.json()).toEqual({
      members: [
        {
          name: 'node1',
          role: 'leader',
          state: 'running',
          api_url: 'http://127.0.0.1:8108/stator',
          host: '127.0.0.1',
          port: 5532,
          timeline: 11,
          tags: { failover_priority: 2 },
        },
        {
          name: 'node2',
          role: 'replica',
          state: 'streaming',
          api_url: 'http://127.0.0.1:8109/stator',
          host: '127.0.0.1',
          port: 5533,
          timeline: 11,
          pending_restart: true,
          pending_restart_reason: { max_connections: { old_value: '100', new_value: '200' } },
          receive_lag: 0,
          receive_lsn: '0/8046D50',
          replay_lag: 0,
          replay_lsn: '0/8046D50',
          lag: 0,
          lsn: '0/8046D50',
        },
        {
          name: 'node3',
          role: 'replica',
          state: 'running',
          api_url: 'http://127.0.0.1:8110/stator',
          host: '127.0.0.1',
          port: 5534,
          timeline: 11,
          receive_lag: 4096,
          receive_lsn: '0/8045D50',
          replay_lag: 8192,
          replay_lsn: '0/8044D50',
          lag: 4096,
          lsn: '0/8045D50',
        },
      ],
      scope: 'demo',
    });
  });

  it("has every field of the reference's recorded answer, with the same types", async () => {
    const oracle = JSON.parse(readFileSync(join(ORACLE, 'cluster-final.json'), 'utf8')) as {
      members: Array<Record<string, unknown>>;
    };
    const ours = (await request('GET', '/cluster')).json() as { members: Array<Record<string, unknown>> };

    expect(ours.members.map((member) => member.role)).toEqual(oracle.members.map((member) => member.role));
    oracle.members.forEach((expected, index) => {
      for (const [key, value] of Object.entries(expected)) {
        expect([key, typeof ours.members[index][key]]).toEqual([key, typeof value]);
      }
    });
  });

  it('shows pause, a scheduled switchover and sync standbys', async () => {
    const cluster = view.cluster!;
    cluster.config = { value: { ...cluster.config!.value, pause: true, synchronous_mode: 'on' }, modRevision: '4' };
    cluster.sync = { value: { leader: 'node1', sync_standby: 'node3' }, modRevision: '5' };
    cluster.failover = {
      value: { leader: 'node1', member: 'node2', scheduled_at: '2026-11-21T06:00Z' },
      modRevision: '6',
    };

    const document = (await request('GET', '/cluster')).json() as Record<string, unknown> & {
      members: Array<{ role: string }>;
    };

    expect(document.members.map((member) => member.role)).toEqual(['leader', 'replica', 'sync_standby']);
    expect(document.pause).toBe(true);
    expect(document.scheduled_switchover).toEqual({ at: '2026-11-21T06:00:00+00:00', from: 'node1', to: 'node2' });
    expect(Object.keys(document)).toEqual(['members', 'pause', 'scheduled_switchover', 'scope']);
  });

  it("shows each member's site, and a switchover to a site as Patroni's branch does", async () => {
    const cluster = view.cluster!;
    cluster.members = cluster.members.map((member) => ({
      ...member,
      data: { ...member.data, site: member.name === 'node3' ? 'dc2' : 'dc1' },
    }));
    cluster.failover = { value: { leader: 'node1', site: 'dc2', scheduled_at: '2026-11-21T06:00Z' }, modRevision: '6' };

    const document = (await request('GET', '/cluster')).json() as Record<string, unknown> & {
      members: Array<Record<string, unknown>>;
    };

    expect(document.members.map((member) => member.site)).toEqual(['dc1', 'dc1', 'dc2']);
    expect(Object.keys(document.members[0]).slice(-1)).toEqual(['site']);
    expect(document.scheduled_switchover).toEqual({ at: '2026-11-21T06:00:00+00:00', from: 'node1', to: 'site dc2' });
  });

  it('reports positions a member key does not carry as "unknown"', async () => {
    view.cluster!.members = view.cluster!.members.map((member) =>
      member.name === 'node3'
        ? {
            ...member,
            data: { ...member.data, receive_lsn: undefined, replay_lsn: undefined, xlog_location: undefined },
          }
        : member,
    );

    const node3 = ((await request('GET', '/cluster')).json() as { members: Array<Record<string, unknown>> }).members[2];

    expect(node3).toMatchObject({
      receive_lsn: 'unknown',
      receive_lag: 'unknown',
      replay_lsn: 'unknown',
      replay_lag: 'unknown',
      lsn: 'unknown',
      lag: 'unknown',
    });
  });
});

describe('GET /history and GET /config', () => {
  it('answers the history key', async () => {
    const answer = await request('GET', '/history');

    expect(answer.statusCode).toBe(200);
    expect(answer.json()).toEqual(view.cluster!.history!.value);
  });

  it('answers [] when the history key is absent', async () => {
    view.cluster!.history = null;

    expect((await request('GET', '/history')).json()).toEqual([]);
  });

  it('answers the config key', async () => {
    const answer = await request('GET', '/config');

    expect(answer.statusCode).toBe(200);
    expect(answer.json()).toEqual(view.cluster!.config!.value);
  });

  it('answers 502 JSON when the config key is absent, for GET and OPTIONS', async () => {
    view.cluster!.config = null;

    const answer = await request('GET', '/config');

    expect(answer.statusCode).toBe(502);
    expect(answer.json()).toEqual({
      error: 'Bad Gateway',
      message: 'the DCS has no config key: the cluster is not initialized yet',
      statusCode: 502,
    });
    expect((await request('OPTIONS', '/config')).statusCode).toBe(502);
  });
});

describe('cluster reads without a trustworthy DCS view', () => {
  it.each(['/cluster', '/history', '/config'])('answers %s with 503 JSON before the first DCS read', async (path) => {
    view = { ...replicaView(), cluster: null, dcsLastSeen: 0 };

    const answer = await request('GET', path);

    expect(answer.statusCode).toBe(503);
    expect(answer.json()).toEqual({
      error: 'Service Unavailable',
      message: 'the node has not read the cluster from the DCS yet',
      statusCode: 503,
    });
    expect((await request('HEAD', path)).statusCode).toBe(503);
    expect((await request('OPTIONS', path)).statusCode).toBe(503);
  });

  it('answers 503 when the last DCS read is older than ttl', async () => {
    view = { ...replicaView(), dcsLastSeen: NOW - 31_000 };

    const answer = await request('GET', '/cluster');

    expect(answer.statusCode).toBe(503);
    expect(answer.json().message).toBe('the DCS view is stale: last read 31 s ago, more than ttl (30 s)');
  });
});

describe('HEAD and OPTIONS on the cluster reads', () => {
  it.each(['/cluster', '/history', '/config'])('answer %s with 200 and no body', async (path) => {
    for (const method of ['HEAD', 'OPTIONS'] as Method[]) {
      const answer = await request(method, path);
      expect([method, answer.statusCode, answer.body]).toEqual([method, 200, '']);
    }
  });
});

describe('wire format', () => {
  it('answers an unknown path with 404 JSON', async () => {
    const answer = await request('GET', '/nope');

    expect(answer.statusCode).toBe(404);
    expect(answer.headers['content-type']).toMatch(/^application\/json/);
    expect(answer.body).toBe('{"error":"Not Found","message":"no endpoint at /nope","statusCode":404}');
  });

  it('answers HEAD and OPTIONS on an unknown path with 404, and a URL it cannot decode with 400 JSON', async () => {
    expect((await request('HEAD', '/nope')).statusCode).toBe(404);
    expect((await request('OPTIONS', '/nope')).statusCode).toBe(404);
    const badUrl = await request('GET', '/%zz');
    expect(badUrl.statusCode).toBe(400);
    expect(badUrl.json()).toEqual({
      error: 'Bad Request',
      message: "the URL is not valid: '/%zz' is not a valid url component",
      statusCode: 400,
    });
  });

  it('answers a known path with a method it does not serve with 405 and Allow', async () => {
    const answer = await request('DELETE', '/primary');

    expect(answer.statusCode).toBe(405);
    expect(answer.headers.allow).toBe('GET, HEAD, OPTIONS');
    expect(answer.json()).toEqual({
      error: 'Method Not Allowed',
      message: 'DELETE is not allowed on /primary; allowed: GET, HEAD, OPTIONS',
      statusCode: 405,
    });
  });

  it('tolerates a trailing slash, also when telling 405 from 404', async () => {
    expect((await request('GET', '/cluster/')).statusCode).toBe(200);
    expect((await request('PUT', '/metrics/')).statusCode).toBe(405);
    expect((await request('GET', '/test/echo')).headers.allow).toBe('POST');
  });

  it('reads a JSON body with or without a JSON Content-Type, as patronictl and curl -d send it', async () => {
    for (const headers of [
      { 'content-type': 'application/json' },
      {},
      { 'content-type': 'application/x-www-form-urlencoded' },
    ] as Array<Record<string, string>>) {
      const answer = await request('POST', '/test/echo', { headers, payload: '{"leader":"node1"}' });
      expect([headers, answer.statusCode, answer.json()]).toEqual([headers, 201, { received: { leader: 'node1' } }]);
    }
  });

  it('passes an empty body on as no body, even with a JSON Content-Type', async () => {
    const answer = await request('POST', '/test/echo', {
      headers: { 'content-type': 'application/json' },
      payload: '',
    });

    expect(answer.statusCode).toBe(201);
    expect(answer.json()).toEqual({ received: null });
  });

  it('answers 400 naming the rule for a body that is not valid JSON', async () => {
    const answer = await request('POST', '/test/echo', {
      headers: { 'content-type': 'application/json' },
      payload: '{nope',
    });

    expect(answer.statusCode).toBe(400);
    expect(answer.json()).toMatchObject({ error: 'Bad Request', statusCode: 400 });
    expect(answer.json().message).toMatch(/^request body is not valid JSON: /);
  });

  it('answers 400 for JSON that is not an object, and for a __proto__ key', async () => {
    const array = await request('POST', '/test/echo', {
      headers: { 'content-type': 'application/json' },
      payload: '["a"]',
    });
    const prototype = await request('POST', '/test/echo', {
      headers: { 'content-type': 'application/json' },
      payload: '{"__proto__":{"x":1}}',
    });

    expect([array.statusCode, array.json().message]).toEqual([400, 'request body must be a JSON object, got an array']);
    expect(prototype.statusCode).toBe(400);
  });

  it('answers 415 for a body of another media type', async () => {
    const answer = await request('POST', '/test/echo', {
      headers: { 'content-type': 'text/plain' },
      payload: 'leader=node1',
    });

    expect(answer.statusCode).toBe(415);
    expect(answer.json()).toEqual({
      error: 'Unsupported Media Type',
      message: 'Content-Type text/plain is not accepted: request bodies are JSON (application/json)',
      statusCode: 415,
    });
  });

  it('answers 413 for a 2 MiB body', async () => {
    const answer = await request('POST', '/test/echo', {
      headers: { 'content-type': 'application/json' },
      payload: Buffer.alloc(2 * 1024 * 1024, 0x20),
    });

    expect(answer.statusCode).toBe(413);
    expect(answer.json()).toEqual({
      error: 'Payload Too Large',
      message: 'request body too large: the limit is 1048576 bytes',
      statusCode: 413,
    });
  });

  it('answers an HttpException with a string message as plain text', async () => {
    const answer = await request('POST', '/test/scheduled');

    expect(answer.statusCode).toBe(202);
    expect(answer.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(answer.body).toBe('Switchover scheduled');
  });

  it('keeps the connection open and sends Content-Length on every answer', async () => {
    const server = await app.listen(0, '127.0.0.1');
    const { port } = server.address() as AddressInfo;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = (path: string) =>
      new Promise<{ status: number; headers: http.IncomingHttpHeaders; reused: boolean }>((resolve, reject) => {
        const outgoing = http.get({ host: '127.0.0.1', port, path, agent }, (response) => {
          response.resume();
          response.on('end', () =>
            resolve({ status: response.statusCode ?? 0, headers: response.headers, reused: outgoing.reusedSocket }),
          );
        });
        outgoing.on('error', reject);
      });
    try {
      const answers = [await get('/metrics'), await get('/nope'), await get('/liveness'), await get('/cluster')];

      expect(answers.map((answer) => answer.status)).toEqual([200, 404, 200, 200]);
      expect(answers.map((answer) => answer.reused)).toEqual([false, true, true, true]);
      for (const answer of answers) {
        expect(answer.headers['content-length']).toMatch(/^\d+$/);
        expect(answer.headers.connection).toBe('keep-alive');
      }
    } finally {
      agent.destroy();
    }
  });
});

describe('health endpoints next to the new routes', () => {
  it('still answer from the view', async () => {
    expect((await request('GET', '/primary')).statusCode).toBe(200);
    expect((await request('GET', '/replica')).statusCode).toBe(503);
    expect((await request('HEAD', '/liveness')).statusCode).toBe(200);
    expect((await request('OPTIONS', '/leader')).statusCode).toBe(200);
    expect((await request('GET', '/stator')).json()).toMatchObject({ state: 'running', role: 'primary' });
    expect((await request('GET', '/replica?lag=abc')).statusCode).toBe(400);
  });
});

describe('the status document of a node with a site', () => {
  it("carries site after the identity object, as Patroni's branch does, and none without one", async () => {
    expect((await request('GET', '/stator')).json()).not.toHaveProperty('site');
    view = { ...leaderView(), site: 'dc1' };
    const document = (await request('GET', '/stator')).json() as Record<string, unknown>;
    expect(document.site).toBe('dc1');
    const keys = Object.keys(document);
    expect(keys[keys.indexOf('stator') + 1]).toBe('site');
  });
});
