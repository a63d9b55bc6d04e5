import { SimulatedCluster } from './simulated-cluster';

/**
 * With member_slots_ttl (1800 s by default, as Patroni 4.1) the leader publishes every member's slot in `/status`.
 * A member that joins gets its slot on the leader and in `/status` in the same cycle: a client that sees the member
 * stream and reads `/status` next (nostream_node.feature) finds its slot there, not a loop_wait later.
 */
describe("the leader's /status and a member that joins", () => {
  it('names the new member’s slot in the cycle that creates it', async () => {
    const cluster = await SimulatedCluster.start(2);
    try {
      await cluster.runUntil(() => cluster.healthy() !== null, 60_000, 'a healthy cluster');
      const leader = cluster.node(cluster.leaderKey()!);
      await cluster.join('node3');
      await cluster.runUntil(() => leader.server.slots.includes('node3'), 30_000, "the leader's slot for node3");
      expect(Object.keys(cluster.statusKey()?.slots ?? {})).toContain('node3');
    } finally {
      await cluster.stop();
    }
  });
});
