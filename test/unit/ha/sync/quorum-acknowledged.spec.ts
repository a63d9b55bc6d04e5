import { PostgresSample, ReplicationConnection } from '../../../../src/postgresql/postgres.port';
import {
  pickSynchronous,
  quorumAcknowledgedPosition,
  streamingPositions,
  SyncCandidate,
} from '../../../../src/ha/sync/sync-candidates';
import { parseStandbyNames } from '../../../../src/postgresql/standby-names';

function connection(name: string, flush: number, replay = flush): ReplicationConnection {
  return {
    usename: 'replicator',
    application_name: name,
    client_addr: null,
    state: 'streaming',
    sync_state: 'quorum',
    sync_priority: 1,
    write_lsn: flush,
    flush_lsn: flush,
    replay_lsn: replay,
  };
}

function sample(
  standbyNames: string,
  synchronousCommit: string,
  ...replication: ReplicationConnection[]
): PostgresSample {
  return { synchronousStandbyNames: standbyNames, synchronousCommit, replication } as unknown as PostgresSample;
}

function acknowledgedUpTo(current: PostgresSample): number {
  const listed = parseStandbyNames(current.synchronousStandbyNames);
  return quorumAcknowledgedPosition(streamingPositions(current), listed.members, listed.count);
}

describe('quorum mode: what the leader counts as acknowledged', () => {
  it.each([
    // what, synchronous_standby_names, synchronous_commit, standbys (name, flush, replay) -> acknowledged up to
    [
      'ANY 1: the furthest listed standby',
      'ANY 1 (node2,node3)',
      'on',
      [
        ['node2', 100],
        ['node3', 200],
      ],
      200,
    ],
    [
      'ANY 2: the second furthest',
      'ANY 2 (node2,node3,node4)',
      'on',
      [
        ['node2', 100],
        ['node3', 200],
        ['node4', 150],
      ],
      150,
    ],
    [
      'a standby not listed does not count',
      'ANY 1 (node2)',
      'on',
      [
        ['node2', 100],
        ['node3', 200],
      ],
      100,
    ],
    [
      'remote_apply counts replayed positions',
      'ANY 1 (node2,node3)',
      'remote_apply',
      [
        ['node2', 100, 90],
        ['node3', 200, 120],
      ],
      120,
    ],
    [
      'fewer listed standbys streaming than the quorum: nothing is known',
      'ANY 2 (node2,node3)',
      'on',
      [['node2', 100]],
      0,
    ],
  ] as const)('%s', (_what, names, commit, standbys, expected) => {
    const current = sample(names, commit, ...standbys.map(([name, flush, replay]) => connection(name, flush, replay)));
    expect(acknowledgedUpTo(current)).toBe(expected);
  });

  // Found by the model checker (issue 34): node3 alone acknowledged a commit, then its agent stalled and its member key
  // expired while its PostgreSQL streamed on. Counting only standbys with a member key, the leader took node2's position
  // as the bound, confirmed node2 as holding every acknowledged commit and could let it win a race without that commit.
  it('a listed standby whose member key expired still bounds what was acknowledged: the standby behind it is not confirmed', () => {
    const current = sample('ANY 1 (node2,node3)', 'on', connection('node2', 100), connection('node3', 200));
    const node2: SyncCandidate = { name: 'node2', syncState: 'quorum', lsn: 100, noFailover: false, syncPriority: 1 };
    const config = {
      synchronous_mode: 'quorum' as const,
      synchronous_node_count: 1,
      maximum_lag_on_syncnode: -1,
      synchronous_site_count: 0,
      synchronous_mode_strict: false,
    };

    expect(acknowledgedUpTo(current)).toBe(200);
    expect(pickSynchronous([node2], new Set(['node2']), 200, config, acknowledgedUpTo(current)).confirmed).toEqual([]);
    expect(
      pickSynchronous([{ ...node2, lsn: 200 }], new Set(['node2']), 200, config, acknowledgedUpTo(current)).confirmed,
    ).toEqual(['node2']);
  });
});
