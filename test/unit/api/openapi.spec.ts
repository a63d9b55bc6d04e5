import { Module } from '@nestjs/common';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import { ApiModule } from '../../../src/api/api.module';
import { createHttpApp } from '../../../src/api/http-server';
import { OperationsController } from '../../../src/api/operations.controller';
import { NodeDiagnostics } from '../../../src/ha/node-diagnostics';
import { NodeOperations } from '../../../src/ha/node-operations';
import { NodeView } from '../../../src/ha/node-view';
import { answerChecker, documentedOperations, openApiPath, validateOpenApi } from '../../helpers/openapi-check';
import { leaderView, NOW, postgresDownView, replicaView } from './node-view-fixtures';

let view: NodeView;
const diagnostics: NodeDiagnostics = {
  fence: { connected: true, deadline: NOW + 15_000 },
  eventQueue: { depth: 0, oldestAt: null, storeDownSince: null },
};
/** The operation endpoints over nothing: the tests below only send requests their pipes refuse. */
const operations = { requestContext: () => ({ paused: false, now: NOW }) } as unknown as NodeOperations;

interface Served {
  app: NestFastifyApplication;
  fastify: FastifyInstance;
  /** `GET /stator`, ...: every route Fastify registered, as it registered it. */
  routes: string[];
}

async function serve(productKey: 'stator' | 'patroni'): Promise<Served> {
  @Module({
    imports: [
      ApiModule.register({
        identity: { scope: 'demo', version: '0.1.0', productKey },
        source: { view: () => view },
        clock: { now: () => NOW },
        diagnostics: { diagnostics: () => diagnostics },
      }),
    ],
    controllers: [OperationsController],
    providers: [{ provide: NodeOperations, useValue: operations }],
  })
  class NodeApiModule {}
  const app = await createHttpApp({ module: NodeApiModule });
  const fastify: FastifyInstance = app.getHttpAdapter().getInstance();
  const routes: string[] = [];
  fastify.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routes.push(`${method} ${openApiPath(route.url)}`);
  });
  await app.init();
  await fastify.ready();
  return { app, fastify, routes: [...new Set(routes)].sort() };
}

let stator: Served;
let document: Record<string, unknown>;

beforeAll(async () => {
  view = leaderView();
  stator = await serve('stator');
  document = (await stator.fastify.inject({ method: 'GET', url: '/openapi.json' })).json();
});

afterAll(() => stator.app.close());

beforeEach(() => {
  view = leaderView();
});

describe('GET /openapi.json', () => {
  it('answers JSON, the same document each time', async () => {
    const answer = await stator.fastify.inject({ method: 'GET', url: '/openapi.json' });
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(answer.json()).toEqual(document);
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    const result = await validateOpenApi(document);
    expect(result.errors).toBeUndefined();
    expect(result).toMatchObject({ valid: true, version: '3.1' });
    expect(document.openapi).toBe('3.1.0');
    expect(JSON.stringify(document)).not.toContain('"nullable"');
  });

  it('documents every route the server registered, with its methods, and nothing else', () => {
    expect(documentedOperations(document)).toEqual(stator.routes);
    expect(stator.routes.length).toBeGreaterThan(80);
  });

  it('documents the health checks from the table that registers them, the probes without a body', () => {
    const paths = document.paths as Record<
      string,
      Record<string, { responses: Record<string, { content?: unknown }> }>
    >;
    expect(Object.keys(paths['/replica'])).toEqual(['get', 'options', 'head']);
    expect(paths['/replica'].get.responses['503'].content).toBeDefined();
    expect(paths['/liveness'].get.responses['503'].content).toBeUndefined();
  });

  it("documents each operation's plain-text answers and body refusals", () => {
    const switchover = (
      document.paths as Record<
        string,
        Record<string, { responses: Record<string, { content?: Record<string, unknown> }> }>
      >
    )['/switchover'].post;
    expect(Object.keys(switchover.responses).sort()).toEqual([
      '200',
      '202',
      '400',
      '401',
      '403',
      '412',
      '413',
      '415',
      '422',
      '503',
    ]);
    expect(Object.keys(switchover.responses['400'].content ?? {})).toEqual(['text/plain', 'application/json']);
  });
});

describe('real answers match the document', () => {
  const check = () => answerChecker(document);

  it.each([
    ['leader', 'GET', '/stator', leaderView],
    ['leader', 'GET', '/primary', leaderView],
    ['replica', 'GET', '/primary', replicaView],
    ['replica', 'GET', '/replica?lag=16MB', replicaView],
    ['stopped node', 'GET', '/stator', postgresDownView],
    ['stopped node', 'GET', '/health', postgresDownView],
    ['leader', 'GET', '/replica?lag=abc', leaderView],
    ['leader', 'OPTIONS', '/leader', leaderView],
    ['leader', 'HEAD', '/stator', leaderView],
    ['leader', 'GET', '/liveness', leaderView],
    ['leader', 'GET', '/cluster', leaderView],
    ['leader', 'GET', '/history', leaderView],
    ['leader', 'GET', '/config', leaderView],
    ['leader', 'GET', '/schedule', leaderView],
    ['leader', 'GET', '/failsafe', leaderView],
    ['leader', 'GET', '/metrics', leaderView],
    ['leader', 'GET', '/events', leaderView],
    ['leader', 'GET', '/stator/diagnostics', leaderView],
    ['stopped node', 'GET', '/stator/diagnostics', postgresDownView],
    ['node with a stale view', 'GET', '/cluster', () => ({ ...leaderView(), dcsLastSeen: NOW - 60_000 })],
  ] as const)('%s: %s %s', async (_node, method, url, makeView) => {
    view = makeView();
    const answer = await stator.fastify.inject({ method, url });
    const path = url.split('?')[0];
    expect(
      check()(path, method, {
        status: answer.statusCode,
        type: String(answer.headers['content-type'] ?? ''),
        body: answer.body,
      }),
    ).toEqual([]);
  });

  it.each([
    ['POST', '/switchover', '{"candidate":"node2"}', 'application/json'],
    ['POST', '/failover', '[1]', 'application/json'],
    ['POST', '/switchover', 'not json', 'application/json'],
    ['POST', '/restart', '{"timeout":"soon"}', 'application/json'],
    ['POST', '/reinitialize', '{"force":"yes"}', 'application/json'],
    ['PATCH', '/config', '{"nonsense":1}', 'application/json'],
    ['PUT', '/config', '{}', 'application/json'],
    ['POST', '/reload', '{}', 'text/xml'],
    ['PATCH', '/config', `{"x":"${'a'.repeat(70_000)}"}`, 'application/json'],
  ])('refused: %s %s (%#)', async (method, url, payload, contentType) => {
    const answer = await stator.fastify.inject({
      method: method as 'POST',
      url,
      payload,
      headers: { 'content-type': contentType },
    });
    expect(answer.statusCode).toBeGreaterThanOrEqual(400);
    expect(
      check()(url, method, {
        status: answer.statusCode,
        type: String(answer.headers['content-type'] ?? ''),
        body: answer.body,
      }),
    ).toEqual([]);
  });
});

describe('compatibility mode', () => {
  let patroni: Served;

  beforeAll(async () => {
    patroni = await serve('patroni');
  });

  afterAll(() => patroni.app.close());

  it('documents the paths that mode serves: /patroni, not /stator', async () => {
    const compat = (await patroni.fastify.inject({ method: 'GET', url: '/openapi.json' })).json();
    expect((await validateOpenApi(compat)).valid).toBe(true);
    expect(documentedOperations(compat)).toEqual(patroni.routes);
    expect(Object.keys(compat.paths)).toEqual(expect.arrayContaining(['/patroni', '/patroni/diagnostics']));
    expect(Object.keys(compat.paths).filter((path) => path.startsWith('/stator'))).toEqual([]);
    expect(Object.keys(compat.components.schemas.StatusDocumentDto.properties)).toContain('patroni');

    const status = await patroni.fastify.inject({ method: 'GET', url: '/patroni' });
    expect(
      answerChecker(compat)('/patroni', 'GET', {
        status: status.statusCode,
        type: String(status.headers['content-type']),
        body: status.body,
      }),
    ).toEqual([]);
  });
});
