import { DYNAMIC_CONFIG_DEFAULTS } from '../../../src/config/dynamic-config';
import { ClusterView, Member, MemberData } from '../../../src/dcs/dcs.port';
import { NodeView } from '../../../src/ha/node-view';
import { PostgresSample } from '../../../src/postgresql/postgres.port';

/** Fixed node views for the API tests: a 3-node cluster `demo` led by node1, read 1 s before NOW. */
export const NOW = Date.parse('2026-11-21T05:33:30Z');

const LEADER_POSITION = 134507856;

function member(name: string, index: number, extra: Partial<MemberData>): Member {
  return {
    name,
    modRevision: String(10 + index),
    data: {
      conn_url: `postgres://127.0.0.1:${5531 + index}/postgres`,
      api_url: `http://127.0.0.1:${8107 + index}/stator`,
      state: 'running',
      role: 'replica',
      version: '0.1.0',
      ...extra,
    },
  };
}

export function demoCluster(): ClusterView {
  return {
    leader: { value: 'node1', modRevision: '7' },
    // Out of order on purpose: the document sorts by name.
    members: [
      member('node3', 3, {
        timeline: 11,
        xlog_location: LEADER_POSITION - 4096,
        receive_lsn: LEADER_POSITION - 4096,
        replay_lsn: LEADER_POSITION - 8192,
      }),
      member('node1', 1, {
        role: 'primary',
        timeline: 11,
        xlog_location: LEADER_POSITION,
        tags: { failover_priority: 2 },
      }),
      member('node2', 2, {
        timeline: 11,
        replication_state: 'streaming',
        xlog_location: LEADER_POSITION,
        receive_lsn: LEADER_POSITION,
        replay_lsn: LEADER_POSITION,
        pending_restart: true,
        pending_restart_reason: { max_connections: { old_value: '100', new_value: '200' } },
      }),
    ],
    initialize: '7710492406033019830',
    config: {
      value: {
        ttl: 30,
        loop_wait: 10,
        retry_timeout: 10,
        maximum_lag_on_failover: 1048576,
        postgresql: {
          use_pg_rewind: true,
          use_slots: true,
          parameters: { wal_level: 'replica', max_connections: 100 },
        },
      },
      modRevision: '3',
    },
    failover: null,
    history: {
      value: [
        [1, 134502192, 'no recovery target specified', '2026-11-21T05:30:39.517184+00:00', 'node2'],
        [2, 134502944, 'no recovery target specified', '2026-11-21T05:30:52.553184+00:00', 'node1'],
      ],
      modRevision: '9',
    },
    sync: null,
    status: { value: { optime: LEADER_POSITION }, modRevision: '20' },
    failsafe: null,
    revision: '20',
  };
}

const LEADER_SAMPLE: PostgresSample = {
  inRecovery: false,
  serverVersion: 150018,
  postmasterStartTime: '2026-11-21 05:26:26.449223+00:00',
  timeline: 11,
  walPosition: LEADER_POSITION,
  receivedLsn: null,
  replayedLsn: null,
  replayedTimestamp: null,
  replayPaused: false,
  replicationState: null,
  latestEndLsn: null,
  replication: [
    {
      usename: 'replicator',
      application_name: 'node2',
      client_addr: '127.0.0.1',
      state: 'streaming',
      sync_state: 'async',
      sync_priority: 0,
      write_lsn: LEADER_POSITION,
      flush_lsn: LEADER_POSITION,
      replay_lsn: LEADER_POSITION,
    },
  ],
  synchronousStandbyNames: '',
  synchronousCommit: 'on',
  systemIdentifier: '7710492406033019830',
  pendingRestart: {},
};

const REPLICA_SAMPLE: PostgresSample = {
  ...LEADER_SAMPLE,
  inRecovery: true,
  postmasterStartTime: '2026-11-21 05:21:52+00:00',
  walPosition: 83886080,
  receivedLsn: 83886080,
  replayedLsn: 83886000,
  replayedTimestamp: '2026-11-21 05:33:28.5+00:00',
  replicationState: 'streaming',
  latestEndLsn: LEADER_POSITION,
  replication: [],
  pendingRestart: { max_connections: { old_value: '100', new_value: '200' } },
};

function baseView(): NodeView {
  return {
    name: 'node1',
    pgState: 'running',
    role: 'primary',
    leadership: 'leader',
    lockValidUntil: NOW + 20_000,
    sample: LEADER_SAMPLE,
    sampleAt: NOW - 500,
    pgAnsweredAt: NOW - 500,
    cluster: demoCluster(),
    dcsLastSeen: NOW - 1_000,
    config: {
      ...DYNAMIC_CONFIG_DEFAULTS,
      parameters: {},
      slots: [],
      ignore_slots: [],
      standby_cluster: null,
      pg_hba: [],
      pg_ident: [],
      recovery_conf: {},
    },
    lastCycleAt: NOW - 1_000,
    verdict: 'no action. I am (node1), the leader with the lock',
    dataDir: { state: 'initialized', systemIdentifier: '7710492406033019830', standbySignal: false },
    tags: { failover_priority: 2 },
    activity: null,
    scheduledRestart: null,
    failsafeActive: false,
  };
}

export function leaderView(): NodeView {
  return baseView();
}

export function replicaView(): NodeView {
  return {
    ...baseView(),
    name: 'node2',
    role: 'replica',
    leadership: 'follower',
    lockValidUntil: 0,
    sample: REPLICA_SAMPLE,
    verdict: 'no action. I am (node2), a secondary, and following a leader (node1)',
    tags: {},
  };
}

/** node3 with PostgreSQL stopped: no sample, the role machine still says replica; nofailover set. */
export function postgresDownView(): NodeView {
  return {
    ...replicaView(),
    name: 'node3',
    pgState: 'stopped',
    sample: null,
    tags: { nofailover: true },
  };
}
