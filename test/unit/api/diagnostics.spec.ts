import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { HealthIndicatorService } from '@nestjs/terminus';
import type { FastifyInstance } from 'fastify';
import { ApiModule } from '../../../src/api/api.module';
import { DiagnosisInput, DiagnosticsIndicators } from '../../../src/api/diagnostics/diagnostics-indicators';
import { createHttpApp } from '../../../src/api/http-server';
import { NodeDiagnostics } from '../../../src/ha/node-diagnostics';
import { NodeView } from '../../../src/ha/node-view';
import { leaderView, NOW, postgresDownView, replicaView } from './node-view-fixtures';

const indicators = new DiagnosticsIndicators(new HealthIndicatorService());

/** A leader's fence armed 15 s ahead, an empty event queue. */
function healthy(): NodeDiagnostics {
  return {
    fence: { connected: true, deadline: NOW + 15_000 },
    eventQueue: { depth: 0, oldestAt: null, storeDownSince: null },
  };
}

function input(view: NodeView, diagnostics: NodeDiagnostics = healthy()): DiagnosisInput {
  return { view, diagnostics, now: NOW };
}

describe('etcd indicator', () => {
  it('is up on a leader read 1 s ago, with the lease time left', () => {
    expect(indicators.etcd(input(leaderView()))).toEqual({
      etcd: {
        status: 'up',
        last_read: new Date(NOW - 1_000).toISOString(),
        last_read_age_ms: 1_000,
        max_read_age_ms: 30_000,
        leader: true,
        lease_left_ms: 20_000,
      },
    });
  });

  it('is up on a replica, which holds no lease', () => {
    expect(indicators.etcd(input(replicaView())).etcd).toMatchObject({
      status: 'up',
      leader: false,
      lease_left_ms: null,
    });
  });

  it.each([
    ['never read', { dcsLastSeen: 0 }, 'etcd has not been read yet'],
    ['read more than ttl ago', { dcsLastSeen: NOW - 31_000 }, 'etcd last read 31000 ms ago, more than ttl'],
    ['a leader whose lease ran out', { lockValidUntil: NOW - 1 }, 'the leader lease has run out'],
  ])('is down when %s', (_case, change, message) => {
    expect(indicators.etcd(input({ ...leaderView(), ...change })).etcd).toMatchObject({ status: 'down', message });
  });
});

describe('postgres indicator', () => {
  it('is up with a sample 500 ms old, under postgres_unresponsive_timeout', () => {
    expect(indicators.postgres(input(leaderView())).postgres).toEqual({
      status: 'up',
      state: 'running',
      role: 'primary',
      last_sample: new Date(NOW - 500).toISOString(),
      sample_age_ms: 500,
      max_sample_age_ms: 15_000,
    });
  });

  it('bounds the sample age by ttl when postgres_unresponsive_timeout is 0', () => {
    const view = leaderView();
    view.config = { ...view.config, postgres_unresponsive_timeout: 0 };
    expect(indicators.postgres(input({ ...view, sampleAt: NOW - 20_000 })).postgres).toMatchObject({
      status: 'up',
      max_sample_age_ms: 30_000,
    });
  });

  it.each([
    [
      'the sample is older than the bound',
      { ...leaderView(), sampleAt: NOW - 16_000 },
      'the last PostgreSQL sample is 16000 ms old, more than 15000 ms',
    ],
    ['PostgreSQL is stopped', postgresDownView(), 'PostgreSQL is not running (stopped)'],
    ['it was never sampled', { ...replicaView(), sampleAt: 0 }, 'PostgreSQL has not been sampled yet'],
  ])('is down when %s', (_case, view, message) => {
    expect(indicators.postgres(input(view)).postgres).toMatchObject({ status: 'down', message });
  });
});

describe('fence indicator', () => {
  it('is up on a primary with its fence armed, with the deadline and the time left', () => {
    expect(indicators.fence(input(leaderView())).fence).toEqual({
      status: 'up',
      connected: true,
      armed: true,
      deadline: new Date(NOW + 15_000).toISOString(),
      left_ms: 15_000,
      required: true,
    });
  });

  it('is up on a replica with a disarmed fence', () => {
    const diagnostics = { ...healthy(), fence: { connected: true, deadline: null } };
    expect(indicators.fence(input(replicaView(), diagnostics)).fence).toMatchObject({
      status: 'up',
      armed: false,
      left_ms: null,
      required: false,
    });
  });

  it.each([
    ['a primary runs without a fence', { connected: false, deadline: null }, 'the primary runs without a fence'],
    [
      'a primary runs with it disarmed',
      { connected: true, deadline: null },
      'the primary runs with its fence disarmed',
    ],
    [
      'its deadline passed while PostgreSQL runs',
      { connected: true, deadline: NOW - 1 },
      'the fence deadline has passed while PostgreSQL still runs',
    ],
  ])('is down when %s', (_case, fence, message) => {
    expect(indicators.fence(input(leaderView(), { ...healthy(), fence })).fence).toMatchObject({
      status: 'down',
      message,
    });
  });
});

describe('events indicator', () => {
  it('is up with an empty queue', () => {
    expect(indicators.events(input(leaderView())).events).toEqual({
      status: 'up',
      queue_depth: 0,
      oldest_queued_age_ms: null,
      max_queued_age_ms: 30_000,
      store_down_since: null,
    });
  });

  it('is up while queued events are younger than ttl, and tells since when the store refuses them', () => {
    const eventQueue = { depth: 3, oldestAt: NOW - 2_000, storeDownSince: NOW - 2_500 };
    expect(indicators.events(input(leaderView(), { ...healthy(), eventQueue })).events).toMatchObject({
      status: 'up',
      queue_depth: 3,
      oldest_queued_age_ms: 2_000,
      store_down_since: new Date(NOW - 2_500).toISOString(),
    });
  });

  it('is down when the oldest queued event is older than ttl', () => {
    const eventQueue = { depth: 40, oldestAt: NOW - 31_000, storeDownSince: NOW - 31_000 };
    expect(indicators.events(input(leaderView(), { ...healthy(), eventQueue })).events).toMatchObject({
      status: 'down',
      message: '40 events wait to be stored, the oldest for 31000 ms',
    });
  });
});

describe('ha_cycle indicator', () => {
  it('is up when the last cycle started 1 s ago', () => {
    expect(indicators.haCycle(input(leaderView())).ha_cycle).toEqual({
      status: 'up',
      last_cycle: new Date(NOW - 1_000).toISOString(),
      last_cycle_age_ms: 1_000,
      loop_wait_ms: 10_000,
      max_cycle_age_ms: 30_000,
      verdict: 'no action. I am (node1), the leader with the lock',
    });
  });

  it.each([
    ['it never ran', 0, 'the HA cycle has not run yet'],
    [
      'its last start is older than 2 loop_wait + retry_timeout',
      NOW - 30_001,
      'the last HA cycle started 30001 ms ago, more than 30000 ms',
    ],
  ])('is down when %s', (_case, lastCycleAt, message) => {
    expect(indicators.haCycle(input({ ...leaderView(), lastCycleAt })).ha_cycle).toMatchObject({
      status: 'down',
      message,
    });
  });
});

describe('GET /stator/diagnostics', () => {
  let view: NodeView;
  let diagnostics: NodeDiagnostics;
  let app: NestFastifyApplication;
  let fastify: FastifyInstance;

  beforeAll(async () => {
    const source = { view: () => view };
    const module = ApiModule.register({
      identity: { scope: 'demo', version: '0.1.0', productKey: 'stator' },
      source,
      clock: { now: () => NOW },
      diagnostics: { diagnostics: () => diagnostics },
    });
    app = await createHttpApp(module);
    await app.init();
    fastify = app.getHttpAdapter().getInstance();
  });

  afterAll(() => app.close());

  beforeEach(() => {
    view = leaderView();
    diagnostics = healthy();
  });

  it("answers 200 and terminus's body when every indicator is up, not to be cached", async () => {
    const answer = await fastify.inject({ method: 'GET', url: '/stator/diagnostics' });

    expect(answer.statusCode).toBe(200);
    expect(answer.headers['cache-control']).toBe('no-cache, no-store, must-revalidate');
    const body = answer.json();
    expect(body).toMatchObject({ status: 'ok', error: {} });
    expect(Object.keys(body.details)).toEqual(['etcd', 'postgres', 'fence', 'events', 'ha_cycle']);
    expect(body.info).toEqual(body.details);
  });

  it('answers 503 naming the indicators that are down, with every indicator in details', async () => {
    view = { ...leaderView(), dcsLastSeen: NOW - 40_000 };
    diagnostics = { ...healthy(), fence: { connected: false, deadline: null } };

    const answer = await fastify.inject({ method: 'GET', url: '/stator/diagnostics' });

    expect(answer.statusCode).toBe(503);
    const body = answer.json();
    expect(body.status).toBe('error');
    expect(Object.keys(body.error)).toEqual(['etcd', 'fence']);
    expect(Object.keys(body.info)).toEqual(['postgres', 'events', 'ha_cycle']);
    expect(body.details.fence).toMatchObject({ status: 'down', message: 'the primary runs without a fence' });
  });

  it('answers HEAD with the same code and no body', async () => {
    const answer = await fastify.inject({ method: 'HEAD', url: '/stator/diagnostics' });
    expect(answer.statusCode).toBe(200);
    expect(answer.body).toBe('');
  });
});
