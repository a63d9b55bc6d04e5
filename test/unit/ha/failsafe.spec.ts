import { SimulatedCluster } from './simulated-cluster';

/**
 * DCS failsafe mode driven by the real HA cycle on simulated time (ttl 10, loop_wait 2): with etcd
 * unreachable for longer than ttl, a leader that reaches every member stays primary; if one member
 * does not answer, it demotes as without the mode; no member promotes meanwhile.
 */
describe('failsafe mode on simulated time', () => {
  let cluster: SimulatedCluster;

  beforeEach(async () => {
    cluster = await SimulatedCluster.start(3, { ttl: 10, loop_wait: 2, retry_timeout: 3, failsafe_mode: true });
    await cluster.runUntil(() => cluster.healthy() !== null, 60_000, 'a bootstrapped cluster');
    await cluster.runUntil(
      () => Object.keys(JSON.parse(cluster.backend.get('/service/sim/failsafe')?.value ?? '{}')).length === 3,
      10_000,
      'the failsafe key naming all three',
    );
  });
  afterEach(() => cluster.stop());

  it('etcd down for three ttls: the leader stays the one primary while every member answers it, then keeps the lock when etcd is back', async () => {
    const leader = cluster.healthy()!;
    cluster.backend.setReachable(false);
    for (let second = 0; second < 30; second++) {
      await cluster.run(1_000);
      expect(cluster.primaries()).toEqual([leader]);
    }
    expect(
      cluster
        .node(leader)
        .log.some((line) =>
          line.includes('continue to run as a leader because failsafe mode is enabled and all members are accessible'),
        ),
    ).toBe(true);
    expect(cluster.node(leader).ha.view().failsafeActive).toBe(true);
    expect(cluster.node(leader).events.some((event) => event.type === 'failsafe.activated')).toBe(true);
    const written = cluster.node(leader).server.write(1000);
    cluster.backend.setReachable(true);
    await cluster.runUntil(() => cluster.healthy() === leader, 20_000, 'the same leader healthy with etcd back');
    expect(cluster.node(leader).server.walPosition!).toBeGreaterThanOrEqual(written);
  });

  it('etcd down and one member not answering: the leader demotes, and no member promotes while etcd is down', async () => {
    const leader = cluster.healthy()!;
    const silent = cluster.nodes.find((node) => node.name !== leader)!;
    await cluster.killAgent(silent.name);
    cluster.backend.setReachable(false);
    await cluster.runUntil(() => cluster.primaries().length === 0, 15_000, 'the leader demoted');
    await cluster.run(20_000);
    expect(cluster.primaries()).toEqual([]);
    expect(cluster.node(leader).log.some((line) => line.includes(`failsafe call to ${silent.name} not accepted`))).toBe(
      true,
    );
  });

  it('failsafe mode turned on through /config holds too, etcd failing right after the key was written', async () => {
    await cluster.stop();
    cluster = await SimulatedCluster.start(3, { ttl: 10, loop_wait: 2, retry_timeout: 3 });
    await cluster.runUntil(() => cluster.healthy() !== null, 60_000, 'a bootstrapped cluster');
    cluster.patchConfig({ failsafe_mode: true });
    await cluster.runUntil(() => cluster.backend.get('/service/sim/failsafe') !== null, 10_000, 'the failsafe key');
    const leader = cluster.healthy()!;
    cluster.backend.setReachable(false);
    await cluster.run(25_000);
    expect(cluster.primaries()).toEqual([leader]);
    cluster.backend.setReachable(true);
  });
});
