import { Module } from '@nestjs/common';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import { ApiModule } from '../../../src/api/api.module';
import { createHttpApp } from '../../../src/api/http-server';
import { StatusBody } from '../../../src/api/status-body';
import { ApiIdentity, buildStatusDocument } from '../../../src/api/status-document';
import { NodeView } from '../../../src/ha/node-view';
import { leaderView, NOW, replicaView } from './node-view-fixtures';

const IDENTITY: ApiIdentity = { scope: 'demo', version: '0.1.0', productKey: 'stator' };

/** What a health GET must answer: the document built afresh for this view at this time. */
const built = (view: NodeView, now: number) => JSON.parse(JSON.stringify(buildStatusDocument(view, IDENTITY, now)));
const served = (body: StatusBody, view: NodeView, now: number) => JSON.parse(body.of(view, now).toString('utf8'));

describe('the status body served by health GETs', () => {
  it('is the document built afresh, serialised once while nothing it shows changes', () => {
    const body = new StatusBody(IDENTITY);
    const view = leaderView();
    const first = body.of(view, NOW);
    expect(JSON.parse(first.toString('utf8'))).toEqual(built(view, NOW));
    // Another request a few ms later, with a view read again from the same node: the same bytes.
    expect(body.of({ ...view }, NOW + 5)).toBe(first);
  });

  it('follows a new sample, a new cluster view and new tags', () => {
    const body = new StatusBody(IDENTITY);
    const view = leaderView();
    body.of(view, NOW);
    const replica = replicaView();
    expect(served(body, replica, NOW)).toEqual(built(replica, NOW));
    const retagged = { ...replica, tags: { nofailover: true } };
    expect(served(body, retagged, NOW)).toMatchObject({ tags: { nofailover: true } });
    const unlocked = { ...retagged, cluster: { ...retagged.cluster!, leader: null } };
    expect(served(body, unlocked, NOW)).toMatchObject({ cluster_unlocked: true });
  });

  it('shows the cluster unlocked once the DCS view is older than ttl, and dcs_last_seen by the second', () => {
    const body = new StatusBody(IDENTITY);
    const view = leaderView();
    expect(served(body, view, NOW)).not.toHaveProperty('cluster_unlocked');
    const stale = NOW + view.config.ttl * 1000;
    expect(served(body, view, stale)).toMatchObject({ cluster_unlocked: true });
    const readAgain = { ...view, dcsLastSeen: stale - 10 };
    expect(served(body, readAgain, stale)).toEqual(built(readAgain, stale));
    expect(served(body, readAgain, stale).dcs_last_seen).toBe(Math.floor((stale - 10) / 1000));
  });

  it('counts sample_age up every second while PostgreSQL answers nothing', () => {
    const body = new StatusBody(IDENTITY);
    const view = leaderView();
    const hungAt = view.pgAnsweredAt + view.config.postgres_unresponsive_timeout * 1000 + 1;
    expect(served(body, view, hungAt)).toMatchObject({ postgres_unresponsive: true });
    expect(served(body, view, hungAt + 1000)).toEqual(built(view, hungAt + 1000));
    expect(served(body, view, hungAt + 1000).sample_age).toBe(served(body, view, hungAt).sample_age + 1);
  });
});

let view: NodeView;
let now = NOW;

@Module({
  imports: [ApiModule.register({ identity: IDENTITY, source: { view: () => view }, clock: { now: () => now } })],
})
class TestApiModule {}

describe('GET /primary on the wire', () => {
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

  it('answers the current document as JSON with its length, before and after the node changes', async () => {
    view = leaderView();
    now = NOW;
    const first = await fastify.inject({ method: 'GET', url: '/primary' });
    expect(first.statusCode).toBe(200);
    expect(first.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(Number(first.headers['content-length'])).toBe(first.rawPayload.length);
    expect(first.json()).toEqual(built(view, now));

    view = replicaView();
    const second = await fastify.inject({ method: 'GET', url: '/primary' });
    expect(second.statusCode).toBe(503);
    expect(second.json()).toEqual(built(view, now));
    expect(second.json()).toMatchObject({ role: 'replica' });
  });
});
