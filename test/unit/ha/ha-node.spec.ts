import { SimulatedCluster } from './simulated-cluster';

/**
 * The HA cycle itself (HaNode and its actors), run over the in-memory DCS and PostgreSQL on
 * simulated time: the same code the agent runs, deterministic, in milliseconds of real time.
 * Times below are simulated; ttl 10, loop_wait 2.
 */
describe('HaNode on simulated time', () => {
  let cluster: SimulatedCluster;

  beforeEach(async () => {
    cluster = await SimulatedCluster.start(3);
    await cluster.runUntil(() => cluster.healthy() !== null, 60_000, 'a bootstrapped cluster');
  });
  afterEach(() => cluster.stop());

  it('bootstraps one leader and two streaming replicas of the same system', () => {
    const leader = cluster.healthy()!;
    const systems = new Set(cluster.nodes.map((node) => node.server.systemIdentifier));
    expect(systems.size).toBe(1);
    expect(cluster.node(leader).events.some((event) => event.type === 'cluster.initialized')).toBe(true);
  });

  it("a leader whose watch's cache trails the store (its own key not there yet) reads before it judges its lock: it stays leader", async () => {
    const leader = cluster.healthy()!;
    const { dcs } = cluster.node(leader);
    // As a watch that has not delivered this node's own acquisition yet: the cache shows no leader key.
    dcs.readCached = async () => ({ ...(await dcs.read()), leader: null });
    const eventsBefore = cluster.node(leader).events.length;
    await cluster.run(5 * 2000);
    expect(cluster.healthy()).toBe(leader);
    expect(
      cluster
        .node(leader)
        .events.slice(eventsBefore)
        .map((event) => event.type),
    ).not.toContain('leader.lost');
  });

  it('a dead leader agent: its fence stops PostgreSQL before the lease ends, and a replica takes over with every write', async () => {
    const oldLeader = cluster.healthy()!;
    const oldServer = cluster.node(oldLeader).server;
    const lastWrite = oldServer.write(5000);
    cluster.network.settle();
    await cluster.killAgent(oldLeader);

    const stoppedAfter = await cluster.runUntil(
      () => !oldServer.isRunning,
      15_000,
      'the fence stopping the old primary',
    );
    const newLeaderAfter = await cluster.runUntil(
      () => cluster.leaderKey() !== null && cluster.leaderKey() !== oldLeader && cluster.primaries().length === 1,
      20_000,
      'a new leader',
    );
    const newLeader = cluster.node(cluster.leaderKey()!);

    expect(stoppedAfter).toBeLessThan(10_000); // before the lease could expire
    expect(cluster.primaries()).toEqual([newLeader.name]);
    expect(newLeader.server.walPosition!).toBeGreaterThanOrEqual(lastWrite);
    expect(newLeaderAfter).toBeLessThan(15_000);
    expect(newLeader.events.some((event) => event.type === 'leader.promoted')).toBe(true);
  });

  it('a failover candidate leaves the read pool as it takes the lock and promotes only after the load balancer drain', async () => {
    const oldLeader = cluster.healthy()!;
    await cluster.killAgent(oldLeader);
    await cluster.runUntil(
      () => cluster.leaderKey() !== null && cluster.leaderKey() !== oldLeader && cluster.primaries().length === 1,
      20_000,
      'a new leader',
    );
    const events = cluster.node(cluster.leaderKey()!).events;
    const at = (type: string) => {
      const event = events.find((e) => e.type === type);
      if (!event) throw new Error(`no ${type} among ${events.map((e) => e.type).join(', ')}`);
      return Date.parse(event.at);
    };
    const order = events
      .map((e) => e.type)
      .filter((type) => type.startsWith('load_balancer.') || ['leader.acquired', 'leader.promoted'].includes(type));
    expect(order).toEqual([
      'leader.acquired',
      'load_balancer.replica_checks_withdrawn',
      'load_balancer.drain_started',
      'load_balancer.drain_ended',
      'leader.promoted',
    ]);
    // Simulated time advances in steps: the drain ends at the first step past 750 ms.
    expect(at('load_balancer.drain_ended') - at('load_balancer.drain_started')).toBeGreaterThanOrEqual(750);
    expect(at('load_balancer.drain_ended') - at('load_balancer.drain_started')).toBeLessThan(900);
    expect(at('load_balancer.replica_checks_withdrawn') - at('leader.acquired')).toBeLessThan(50);
  });

  it('a member whose key another agent wrote (a Patroni node mid-migration) is recorded once per change of agent', async () => {
    const patroniKey = (version: string, statorVersion?: string) =>
      JSON.stringify({
        conn_url: 'postgres://127.0.0.1:6000/postgres',
        api_url: 'http://127.0.0.1:9000/patroni',
        state: 'running',
        role: 'replica',
        version,
        ...(statorVersion ? { stator_version: statorVersion } : {}),
      });
    const seen = (member: string) =>
      cluster.nodes.flatMap((node) =>
        node.events
          .filter((event) => event.type === 'member.agent_seen' && event.data?.member === member)
          .map((event) => `${node.name}:${String(event.data?.agent)}`),
      );
    cluster.backend.put('/service/sim/members/legacy', patroniKey('3.0.2'));
    await cluster.runUntil(() => seen('legacy').length === 3, 10_000, 'every node seeing the Patroni member');
    await cluster.runUntil(() => false, 6_000, 'three more cycles').catch(() => undefined); // no condition: just time passing
    expect(seen('legacy').sort()).toEqual(['node1:patroni 3.0.2', 'node2:patroni 3.0.2', 'node3:patroni 3.0.2']);
    cluster.backend.put('/service/sim/members/legacy', patroniKey('4.1.4', '0.1.0'));
    await cluster.runUntil(() => seen('legacy').length === 6, 10_000, 'every node seeing it run Stator');
    const changed = cluster.nodes[0].events.find(
      (event) =>
        event.type === 'member.agent_seen' && event.data?.agent === 'stator 0.1.0' && event.data?.member === 'legacy',
    );
    expect(changed?.data).toMatchObject({ previous: 'patroni 3.0.2', version: '4.1.4' });
  });

  it('a crashed leader postmaster is started again by its own agent, which keeps the lock', async () => {
    const leader = cluster.healthy()!;
    cluster.node(leader).server.crash();
    await cluster.runUntil(() => cluster.healthy() === leader, 10_000, 'the same leader healthy again');
    expect(cluster.leaderKey()).toBe(leader);
  });

  it.each([false, true])(
    'an agent restarted beside its running replica (paused: %s) keeps it streaming from the leader, never restarting it',
    async (paused) => {
      const leader = cluster.healthy()!;
      const replica = cluster.nodes.find((node) => node.name !== leader)!;
      if (paused) {
        cluster.patchConfig({ pause: true });
        await cluster.runUntil(
          () => cluster.nodes.every((node) => node.ha.view().config.pause),
          10_000,
          'every node paused',
        );
      }
      const postmaster = replica.server.pid;
      await cluster.restartAgent(replica.name);
      // Several cycles: the first ones adopt the server and read its state; a reload then must not drop its upstream.
      await cluster.run(10_000);
      expect({ streaming: replica.server.isStreaming, pid: replica.server.pid }).toEqual({
        streaming: true,
        pid: postmaster,
      });
      // One reconfiguration, pointing it at the leader: not a reload without an upstream racing it (which, on a real
      // server, could leave the file without primary_conninfo and the replica not streaming for good).
      const restarted = cluster.node(replica.name).log;
      expect(restarted.filter((line) => /reloading the configuration/.test(line))).toEqual([]);
      expect(cluster.leaderKey()).toBe(leader);
    },
  );

  it('a scheduled restart runs at its time on simulated time, and is recorded as executed', async () => {
    const replica = cluster.nodes.find((node) => node.name !== cluster.healthy())!;
    const pidBefore = replica.server.pid;
    const at = cluster.clock.now() + 30_000;
    replica.ha.scheduleRestart({ at, schedule: new Date(at).toISOString(), postmasterStartTime: null });
    await cluster.run(25_000);
    expect(replica.server.pid).toBe(pidBefore);
    await cluster.runUntil(
      () => replica.server.pid !== pidBefore && replica.server.isStreaming,
      10_000,
      'the restarted replica streaming',
    );
    expect(replica.events.map((event) => event.type)).toEqual(
      expect.arrayContaining(['restart.scheduled', 'restart.executed']),
    );
  });

  it('the wall clock jumps back and forward by 10 minutes: no lease lost, no fence fired, a scheduled restart neither early nor lost', async () => {
    const TEN_MINUTES = 600_000;
    const leader = cluster.healthy()!;
    const leaderPid = cluster.node(leader).server.pid;
    const replica = cluster.nodes.find((node) => node.name !== leader)!;
    const pidBefore = replica.server.pid;
    const at = cluster.clock.now() + 30_000;
    replica.ha.scheduleRestart({ at, schedule: new Date(at).toISOString(), postmasterStartTime: null });

    // Set back 10 minutes 5 s in: the restart is now 10 min 25 s ahead on the wall clock, and waits for it.
    await cluster.run(5_000);
    cluster.clock.jumpWall(-TEN_MINUTES);
    await cluster.run(40_000);
    expect(replica.server.pid).toBe(pidBefore);
    // Set forward again, past the restart's time by 15 s: it runs now rather than being thrown away as stale.
    cluster.clock.jumpWall(TEN_MINUTES);
    expect(cluster.clock.now()).toBeGreaterThan(at + 10_000);
    await cluster.runUntil(
      () => replica.server.pid !== pidBefore && replica.server.isStreaming,
      10_000,
      'the restarted replica streaming',
    );

    const types = replica.events.map((event) => event.type);
    expect(types).toContain('restart.executed');
    expect(types).not.toContain('restart.expired');
    // The leader kept its key, its lease and its postmaster throughout.
    expect(cluster.healthy()).toBe(leader);
    expect(cluster.node(leader).server.pid).toBe(leaderPid);
    expect(
      cluster.nodes
        .flatMap((node) => node.events)
        .filter((event) => ['leader.lost', 'leader.acquired'].includes(event.type)),
    ).toEqual([]);
    expect(replica.log.join('\n')).toMatch(/the wall clock jumped back by 600 s since the last cycle/);
  });

  it('a hung leader PostgreSQL: the leader kills it and another node takes over, never two writable primaries', async () => {
    const oldLeader = cluster.healthy()!;
    const hung = cluster.node(oldLeader).server;
    const hungPid = hung.pid;
    // Queries time out, as the real adapter's deadline makes them; the server accepts no write.
    hung.freeze();
    let twoWritable = 0;
    const tookOver = await cluster.runUntil(
      () => {
        const writable = cluster.primaries().filter((name) => !cluster.node(name).server.postmaster?.frozen);
        if (writable.length > 1) twoWritable++;
        return (
          cluster.leaderKey() !== null && cluster.leaderKey() !== oldLeader && writable.includes(cluster.leaderKey()!)
        );
      },
      20_000,
      'another leader',
    );
    expect(hung.pid).not.toBe(hungPid); // killed (and started again as a replica, if it already was)
    expect(cluster.primaries()).toEqual([cluster.leaderKey()]);
    expect(twoWritable).toBe(0);
    expect(tookOver).toBeLessThan(10_000 + 5_000); // ttl + 5 s
  });
});
