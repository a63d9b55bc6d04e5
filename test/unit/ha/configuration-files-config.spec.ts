import { SimulatedCluster } from './simulated-cluster';

/**
 * `postgresql.pg_hba`, `pg_ident` and `recovery_conf` of `/config` reach what every node writes, a node's own
 * file wins where it sets them (as Patroni merges them), and a change is written and reloaded.
 */
describe('pg_hba, pg_ident and recovery_conf from /config on simulated time', () => {
  let cluster: SimulatedCluster;

  afterEach(() => cluster.stop());

  const written = (name: string) => cluster.node(name).server.cluster?.settings;

  it('each node writes the cluster-wide lines unless its own file sets them; replicas alone get recovery_conf', async () => {
    const localHba = ['local all all peer'];
    cluster = await SimulatedCluster.start(3, { ttl: 10, loop_wait: 2, retry_timeout: 3 }, (name) =>
      name === 'node3' ? { pg_hba: localHba, recovery_conf: { restore_command: 'local' } } : {},
    );
    await cluster.runUntil(() => cluster.healthy() !== null, 60_000, 'a bootstrapped cluster');
    const leader = cluster.healthy()!;
    expect(written(leader)?.pgHba).toBeUndefined();

    const clusterHba = ['host all all 10.0.0.0/8 scram-sha-256'];
    cluster.patchConfig({
      postgresql: { pg_hba: clusterHba, pg_ident: ['m a b'], recovery_conf: { restore_command: 'cluster' } },
    });
    await cluster.runUntil(
      () => cluster.nodes.every((node) => written(node.name)?.pgIdent?.[0] === 'm a b'),
      20_000,
      'pg_ident written everywhere',
    );
    for (const node of cluster.nodes) {
      const settings = written(node.name)!;
      expect(settings.pgHba).toEqual(node.name === 'node3' ? localHba : clusterHba);
      if (node.name === leader) expect(settings.recoveryConf).toBeUndefined();
      else expect(settings.recoveryConf).toEqual({ restore_command: node.name === 'node3' ? 'local' : 'cluster' });
    }
    expect(cluster.node(leader).log).toContain(
      'INFO: PostgreSQL parameters, pg_hba, pg_ident or recovery_conf changed: reloading the configuration',
    );

    cluster.patchConfig({ postgresql: null });
    await cluster.runUntil(() => written(leader)?.pgHba === undefined, 20_000, 'the default pg_hba back on the leader');
    expect(written(leader)?.bootstrapHba).toEqual([]);
  });
});
