import { parseStandbyNames } from '../../../src/postgresql/standby-names';
import { SimulatedCluster } from './simulated-cluster';

/**
 * Synchronous replication driven by the real HA cycle over the in-memory DCS and PostgreSQL, on
 * simulated time (ttl 10, loop_wait 2). The memory server derives pg_stat_replication's sync_state
 * from synchronous_standby_names as PostgreSQL does.
 */
describe('synchronous mode on simulated time', () => {
  let cluster: SimulatedCluster;

  afterEach(() => cluster.stop());

  const standbyNamesOn = (name: string) => cluster.node(name).server.parameter('synchronous_standby_names') ?? '';

  async function healthyCluster(settings: Record<string, unknown>): Promise<string> {
    cluster = await SimulatedCluster.start(3, { ttl: 10, loop_wait: 2, retry_timeout: 3, ...settings });
    await cluster.runUntil(() => cluster.healthy() !== null, 60_000, 'a bootstrapped cluster');
    return cluster.healthy()!;
  }

  it('names one caught-up standby in /sync only after synchronous_standby_names lists it', async () => {
    const leader = await healthyCluster({ synchronous_mode: true });
    await cluster.runUntil(() => Boolean(cluster.syncKey()?.sync_standby), 20_000, 'a synchronous standby in /sync');
    const sync = cluster.syncKey()!;
    expect(sync.leader).toBe(leader);
    expect(sync.sync_standby!.split(',')).toHaveLength(1);
    expect(standbyNamesOn(leader)).toBe(sync.sync_standby);
    const changes = cluster
      .node(leader)
      .events.filter((event) => event.type === 'sync.changed')
      .map((event) => event.data);
    // First the leader alone, then the standby: never a standby in /sync before the setting listed it.
    expect(changes[0]).toMatchObject({ leader, sync_standby: null });
    expect(changes[changes.length - 1]).toMatchObject({ leader, sync_standby: sync.sync_standby });
  });

  it('two synchronous standbys with synchronous_node_count 2, back to one, and off restores the user setting', async () => {
    const leader = await healthyCluster({ synchronous_mode: true });
    await cluster.runUntil(() => Boolean(cluster.syncKey()?.sync_standby), 20_000, 'a synchronous standby');
    cluster.patchConfig({ synchronous_node_count: 2 });
    await cluster.runUntil(
      () => cluster.syncKey()?.sync_standby?.split(',').length === 2,
      20_000,
      'two synchronous standbys',
    );
    expect(standbyNamesOn(leader)).toBe('2 (node2,node3)'.replace('node2,node3', cluster.syncKey()!.sync_standby!));
    cluster.patchConfig({ synchronous_node_count: 1 });
    await cluster.runUntil(
      () => cluster.syncKey()?.sync_standby?.split(',').length === 1,
      20_000,
      'one synchronous standby',
    );
    cluster.patchConfig({ synchronous_mode: null });
    await cluster.runUntil(
      () => cluster.syncKey() === null && standbyNamesOn(leader) === '',
      20_000,
      '/sync deleted and the setting back to the default',
    );
  });

  it('strict mode without standbys holds commits with the placeholder', async () => {
    const leader = await healthyCluster({ synchronous_mode: true, synchronous_mode_strict: true });
    for (const node of cluster.nodes.filter((n) => n.name !== leader)) await cluster.killAgent(node.name);
    for (const node of cluster.nodes.filter((n) => n.name !== leader)) node.server.crash();
    await cluster.runUntil(
      () => cluster.syncKey()?.sync_standby === null || cluster.syncKey()?.sync_standby === undefined,
      20_000,
      'the standbys dropped from /sync',
    );
    await cluster.run(4_000);
    expect(standbyNamesOn(leader)).not.toBe('');
    expect(cluster.node(leader).log.some((line) => line.includes('synchronous_mode_strict is requested'))).toBe(true);
  });

  it('a dead leader is replaced by its synchronous standby, never by the asynchronous one', async () => {
    const oldLeader = await healthyCluster({ synchronous_mode: true });
    await cluster.runUntil(() => Boolean(cluster.syncKey()?.sync_standby), 20_000, 'a synchronous standby');
    const syncStandby = cluster.syncKey()!.sync_standby!;
    const asyncStandby = cluster.nodes.find((n) => n.name !== oldLeader && n.name !== syncStandby)!;
    // The asynchronous standby ends up ahead: it would win an asynchronous leader race.
    cluster.node(syncStandby).server.setStreamingPaused(true);
    cluster.node(oldLeader).server.write(5000);
    expect(asyncStandby.server.walPosition!).toBeGreaterThan(cluster.node(syncStandby).server.walPosition!);
    await cluster.killAgent(oldLeader);
    cluster.node(oldLeader).server.crash();
    await cluster.runUntil(
      () => cluster.leaderKey() !== null && cluster.leaderKey() !== oldLeader && cluster.primaries().length === 1,
      30_000,
      'a new leader',
    );
    expect(cluster.leaderKey()).toBe(syncStandby);
    cluster.node(syncStandby).server.setStreamingPaused(false);
    expect(cluster.syncKey()?.leader).toBe(syncStandby);
  });

  it('quorum mode: ANY 1 of both standbys, quorum 1 in /sync, and a dead leader replaced by a standby that reached quorum', async () => {
    const leader = await healthyCluster({ synchronous_mode: 'quorum' });
    const standbys = cluster.nodes
      .filter((n) => n.name !== leader)
      .map((n) => n.name)
      .sort();
    await cluster.runUntil(
      () => cluster.syncKey()?.sync_standby === standbys.join(','),
      20_000,
      'both standbys voters',
    );
    expect(cluster.syncKey()).toEqual({ leader, quorum: 1, sync_standby: standbys.join(',') });
    expect(standbyNamesOn(leader)).toBe(`ANY 1 (${standbys.join(',')})`);
    const changes = cluster
      .node(leader)
      .events.filter((event) => event.type === 'sync.changed')
      .map((event) => event.data as { quorum: number; sync_standby: string | null });
    for (const change of changes) {
      // The quorum invariant at every step: quorum + numsync >= voters, with numsync 1 here.
      const voters = change.sync_standby ? change.sync_standby.split(',').length : 0;
      expect(change.quorum + 1).toBeGreaterThanOrEqual(voters);
    }
    await cluster.killAgent(leader);
    cluster.node(leader).server.crash();
    await cluster.runUntil(
      () => cluster.leaderKey() !== null && cluster.leaderKey() !== leader && cluster.primaries().length === 1,
      30_000,
      'a new leader',
    );
    await cluster.runUntil(
      () => cluster.syncKey()?.leader === cluster.leaderKey(),
      20_000,
      '/sync handed to the new leader',
    );
  });

  it('off, on, quorum and off again at run time: at every step /sync promises no more than the setting in force', async () => {
    const leader = await healthyCluster({});
    const checkEveryStep = async (until: () => boolean, description: string) => {
      await cluster.runUntil(
        () => {
          const sync = cluster.syncKey();
          const names = parseStandbyNames(standbyNamesOn(leader));
          const voters = sync?.sync_standby?.split(',') ?? [];
          const listed = names.members.map((n) => n.toLowerCase());
          if (names.kind === 'quorum') {
            // Any set of standbys that can acknowledge a commit meets any set that can elect a leader.
            expect((sync?.quorum ?? 0) + names.count).toBeGreaterThanOrEqual(new Set([...voters, ...listed]).size);
          } else if (sync?.leader && (sync.quorum ?? 0) === 0) {
            // Every standby /sync names must be one the setting makes wait for.
            for (const voter of voters) expect(listed).toContain(voter.toLowerCase());
          }
          return until();
        },
        30_000,
        description,
      );
    };
    cluster.patchConfig({ synchronous_mode: true });
    await checkEveryStep(() => Boolean(cluster.syncKey()?.sync_standby), 'a synchronous standby');
    cluster.patchConfig({ synchronous_mode: 'quorum' });
    await checkEveryStep(
      () => cluster.syncKey()?.sync_standby?.split(',').length === 2 && standbyNamesOn(leader).startsWith('ANY 1'),
      'quorum over both standbys',
    );
    cluster.patchConfig({ synchronous_mode: null });
    await checkEveryStep(
      () => cluster.syncKey() === null && standbyNamesOn(leader) === '',
      'synchronous replication off',
    );
  });

  it('a synchronous standby asked to restart leaves /sync before its server stops', async () => {
    await healthyCluster({ synchronous_mode: true });
    await cluster.runUntil(() => Boolean(cluster.syncKey()?.sync_standby), 20_000, 'a synchronous standby');
    const standby = cluster.node(cluster.syncKey()!.sync_standby!);
    const pidBefore = standby.server.pid;
    const restarted = standby.ha.restartNow();
    let namedWhileDown = false;
    await cluster.runUntil(
      () => {
        if (!standby.server.isRunning && cluster.syncKey()?.sync_standby?.split(',').includes(standby.name))
          namedWhileDown = true;
        return standby.server.pid !== pidBefore && standby.server.isRunning;
      },
      30_000,
      'the standby restarted',
    );
    expect(await restarted).toBe('restarted');
    expect(namedWhileDown).toBe(false);
    expect(
      standby.log.some((line) => line.includes('Waiting for primary to release us from synchronous standby')),
    ).toBe(true);
  });
});
