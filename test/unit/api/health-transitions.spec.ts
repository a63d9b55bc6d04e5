import { healthStatus } from '../../../src/api/health';
import { NodeView } from '../../../src/ha/node-view';
import { leaderView, NOW, replicaView } from './node-view-fixtures';

/** A replica view whose DCS view carries this failover request. */
function withFailover(view: NodeView, request: { leader?: string; member?: string; scheduled_at?: string }): NodeView {
  return { ...view, cluster: { ...view.cluster!, failover: { value: request, modRevision: '20' } } };
}

describe('health checks change before the role does (load balancers drain first)', () => {
  it('takes the named candidate of a due switchover out of the read pool before it promotes', () => {
    const candidate = withFailover(replicaView(), { leader: 'node1', member: 'node2' });
    expect(healthStatus('/replica', {}, replicaView(), NOW)).toBe(200);
    expect(healthStatus('/replica', {}, candidate, NOW)).toBe(503);
    expect(healthStatus('/read-only', {}, candidate, NOW)).toBe(503);
    expect(healthStatus('/async', {}, candidate, NOW)).toBe(503);
  });

  it('leaves a candidate of a switchover scheduled later in the pool, and the other replicas too', () => {
    expect(
      healthStatus(
        '/replica',
        {},
        withFailover(replicaView(), { leader: 'node1', member: 'node2', scheduled_at: '2030-01-01T00:00:00Z' }),
        NOW,
      ),
    ).toBe(200);
    expect(healthStatus('/replica', {}, withFailover(replicaView(), { leader: 'node1', member: 'node3' }), NOW)).toBe(
      200,
    );
  });

  it('takes a replica that holds the lock out of the read pool while it promotes', () => {
    const promoting: NodeView = { ...replicaView(), leadership: 'leader', lockValidUntil: NOW + 10_000 };
    expect(healthStatus('/replica', {}, promoting, NOW)).toBe(503);
    expect(healthStatus('/leader', {}, promoting, NOW)).toBe(200);
  });

  it('stops answering 200 on /primary when the leader demotes itself, while it still holds the lock', () => {
    const demoting: NodeView = { ...leaderView(), role: 'demoted' };
    expect(healthStatus('/primary', {}, leaderView(), NOW)).toBe(200);
    expect(healthStatus('/primary', {}, demoting, NOW)).toBe(503);
    expect(healthStatus('/read-write', {}, demoting, NOW)).toBe(503);
    expect(healthStatus('/leader', {}, demoting, NOW)).toBe(200);
  });
});

describe("a PostgreSQL that answers nothing is nobody's target", () => {
  const silentFor = (view: NodeView, ms: number): NodeView => ({
    ...view,
    config: { ...view.config, postgres_unresponsive_timeout: 5 },
    pgAnsweredAt: NOW - ms,
  });

  it('a hung leader answers 503 on /primary, /read-write, /leader and /readiness once past postgres_unresponsive_timeout', () => {
    for (const path of ['/primary', '/read-write', '/leader', '/readiness', '/health']) {
      expect([path, healthStatus(path, {}, silentFor(leaderView(), 5_001), NOW)]).toEqual([path, 503]);
      expect([path, healthStatus(path, {}, silentFor(leaderView(), 4_000), NOW)]).toEqual([path, 200]);
    }
  });

  it('a hung replica leaves the read pool; liveness stays (the agent itself is fine)', () => {
    expect(healthStatus('/replica', {}, silentFor(replicaView(), 6_000), NOW)).toBe(503);
    expect(healthStatus('/read-only', {}, silentFor(replicaView(), 6_000), NOW)).toBe(503);
    expect(healthStatus('/replica', {}, silentFor(replicaView(), 1_000), NOW)).toBe(200);
    expect(healthStatus('/liveness', {}, silentFor(replicaView(), 6_000), NOW)).toBe(200);
  });
});

describe('a standby cluster (reference 1.3: isLeader in a standby cluster)', () => {
  const remote = {
    host: '10.0.0.9',
    port: 5432,
    primary_slot_name: null,
    restore_command: null,
    archive_cleanup_command: null,
    recovery_min_apply_delay: null,
    create_replica_methods: null,
  };
  const inStandbyCluster = (view: NodeView): NodeView => ({
    ...view,
    config: { ...view.config, standby_cluster: remote },
  });

  it('answers for its standby leader as the leader and the standby leader, never as a write target or a read replica', () => {
    const standbyLeader: NodeView = inStandbyCluster({
      ...replicaView(),
      role: 'standby_leader',
      leadership: 'leader',
      lockValidUntil: NOW + 10_000,
    });
    expect(
      ['/leader', '/standby-leader', '/standby_leader', '/primary', '/read-write', '/replica'].map((path) => [
        path,
        healthStatus(path, {}, standbyLeader, NOW),
      ]),
    ).toEqual([
      ['/leader', 200],
      ['/standby-leader', 200],
      ['/standby_leader', 200],
      ['/primary', 503],
      ['/read-write', 503],
      ['/replica', 503],
    ]);
  });

  it('keeps its other members replicas, and no one answers /standby-leader outside a standby cluster', () => {
    expect(healthStatus('/replica', {}, inStandbyCluster(replicaView()), NOW)).toBe(200);
    expect(healthStatus('/standby-leader', {}, inStandbyCluster(replicaView()), NOW)).toBe(503);
    expect(healthStatus('/standby-leader', {}, leaderView(), NOW)).toBe(503);
  });
});
