import { effectiveDynamicConfig } from '../../src/config/dynamic-config';
import {
  readStandbyCluster,
  standbyClusterProblems,
  standbyRecoveryParameters,
} from '../../src/config/standby-cluster-config';

describe('standby_cluster in the dynamic configuration', () => {
  it('reads a remote primary with its recovery settings', () => {
    const adjustments: string[] = [];
    const standby = readStandbyCluster(
      {
        host: 'dc1-primary',
        port: 5433,
        primary_slot_name: 'dr',
        restore_command: 'cp /archive/%f %p',
        recovery_min_apply_delay: '5min',
      },
      adjustments,
    );
    expect(adjustments).toEqual([]);
    expect(standby).toEqual({
      host: 'dc1-primary',
      port: 5433,
      primary_slot_name: 'dr',
      restore_command: 'cp /archive/%f %p',
      archive_cleanup_command: null,
      recovery_min_apply_delay: '5min',
      create_replica_methods: null,
    });
    expect(
      readStandbyCluster({ host: 'h', create_replica_methods: ['pgbackrest', 'basebackup'] }, [])
        ?.create_replica_methods,
    ).toEqual(['pgbackrest', 'basebackup']);
    expect(standbyRecoveryParameters(standby!)).toEqual({
      restore_command: 'cp /archive/%f %p',
      recovery_min_apply_delay: '5min',
    });
  });

  it('reads an archive-only standby cluster: a restore_command without a host', () => {
    expect(standbyClusterProblems({ restore_command: 'cp /archive/%f %p' })).toEqual([]);
    expect(readStandbyCluster({ restore_command: 'cp /archive/%f %p' }, [])).toMatchObject({
      host: null,
      restore_command: 'cp /archive/%f %p',
    });
  });

  it('is no standby cluster when empty or removed, as the reference', () => {
    expect(readStandbyCluster({}, [])).toBeNull();
    expect(readStandbyCluster(null, [])).toBeNull();
    expect(standbyClusterProblems(null)).toEqual([]);
    expect(standbyClusterProblems({})).toEqual([]);
  });

  it('turns synchronous mode off while the cluster is a standby cluster, and on again once it is promoted, as Patroni', () => {
    for (const mode of [true, 'quorum'] as const) {
      expect(
        effectiveDynamicConfig({ synchronous_mode: mode, standby_cluster: { host: 'dc1-primary' } }, {}).config
          .synchronous_mode,
      ).toBe('off');
      expect(
        effectiveDynamicConfig(
          { synchronous_mode: mode, standby_cluster: { restore_command: 'cp /archive/%f %p' } },
          {},
        ).config.synchronous_mode,
      ).toBe('off');
    }
    expect(effectiveDynamicConfig({ synchronous_mode: true, standby_cluster: null }, {}).config.synchronous_mode).toBe(
      'on',
    );
    expect(
      effectiveDynamicConfig({ synchronous_mode: 'quorum', standby_cluster: {} }, {}).config.synchronous_mode,
    ).toBe('quorum');
  });

  it('refuses what it cannot act on, naming the key and the rule', () => {
    expect(standbyClusterProblems({ host: 'a b', port: 70000, primary_slot_name: 'Bad-Name', protocol: 'x' })).toEqual([
      'standby_cluster.protocol: unknown key (known: host, port, primary_slot_name, create_replica_methods, restore_command, archive_cleanup_command, recovery_min_apply_delay)',
      'standby_cluster.host: must be a host name or address',
      'standby_cluster.port: must be an integer from 1 to 65535',
      'standby_cluster.primary_slot_name: a slot name is 1 to 63 lowercase letters, digits or underscores',
    ]);
    expect(standbyClusterProblems({ primary_slot_name: 'dr' })).toEqual([
      'standby_cluster: needs a host (and port) or a restore_command',
    ]);
    expect(standbyClusterProblems({ host: 'h', create_replica_methods: [] })).toEqual([
      'standby_cluster.create_replica_methods: must be a list of at most 16 method names (basebackup, or a method section of postgresql)',
    ]);
    expect(standbyClusterProblems({ host: 'h', restore_command: 'a\nb' })).toEqual([
      'standby_cluster.restore_command: must be one line of at most 4096 characters',
    ]);
  });
});
