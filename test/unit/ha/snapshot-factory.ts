import { EffectiveDynamicConfig } from '../../../src/config/config.types';
import { effectiveDynamicConfig } from '../../../src/config/dynamic-config';
import { ClusterView, Member, MemberData } from '../../../src/dcs/dcs.port';
import { HaSnapshot, LocalView } from '../../../src/ha/cluster-snapshot';
import { PostgresSample } from '../../../src/postgresql/postgres.port';

/** Stator's defaults (Patroni's), as a node without a `/config` key uses them. */
export const defaultConfig: EffectiveDynamicConfig = effectiveDynamicConfig(null, {}).config;

export function sample(overrides: Partial<PostgresSample> = {}): PostgresSample {
  return {
    inRecovery: true,
    serverVersion: 150018,
    postmasterStartTime: '2026-01-01 00:00:00.000000+00:00',
    timeline: 1,
    walPosition: 50_000_000,
    receivedLsn: 50_000_000,
    replayedLsn: 50_000_000,
    replayedTimestamp: null,
    replayPaused: false,
    replicationState: 'streaming',
    latestEndLsn: 50_000_000,
    replication: [],
    synchronousStandbyNames: '',
    synchronousCommit: 'on',
    systemIdentifier: '7000000000000000001',
    pendingRestart: {},
    ...overrides,
  };
}

export const primarySample = (overrides: Partial<PostgresSample> = {}) =>
  sample({
    inRecovery: false,
    receivedLsn: null,
    replayedLsn: null,
    replicationState: null,
    latestEndLsn: null,
    ...overrides,
  });

export function member(name: string, data: Partial<MemberData> = {}): Member {
  const port = 5432 + Number(name.replace(/\D/g, '') || 0);
  return {
    name,
    modRevision: '1',
    data: {
      conn_url: `postgres://127.0.0.1:${port}/postgres`,
      api_url: `http://127.0.0.1:${8008 + port - 5432}/stator`,
      state: 'running',
      role: 'replica',
      version: '0.1.0',
      ...data,
    },
  };
}

/** Three members; the leader's (when `overrides` names one and no members) says it is the primary, as a leader's key does. */
export function cluster(overrides: Partial<ClusterView> = {}): ClusterView {
  const leader = overrides.leader?.value;
  return {
    leader: null,
    members: ['n1', 'n2', 'n3'].map((name) => member(name, name === leader ? { role: 'primary' } : {})),
    initialize: '7000000000000000001',
    config: { value: {}, modRevision: '2' },
    failover: null,
    history: { value: [], modRevision: '3' },
    sync: null,
    status: { value: { optime: 50_000_000 }, modRevision: '4' },
    failsafe: null,
    revision: '10',
    ...overrides,
  };
}

export const leaderKey = (name: string) => ({ value: name, modRevision: '5' });

export function local(overrides: Partial<LocalView> = {}): LocalView {
  return {
    name: 'n1',
    tags: {},
    pgState: 'running',
    busy: null,
    role: 'replica',
    leadership: 'follower',
    dataDir: {
      state: 'initialized',
      systemIdentifier: '7000000000000000001',
      standbySignal: true,
      clusterState: 'in archive recovery',
    },
    sample: sample(),
    upstream: null,
    notStreamingSince: 0,
    bootstrapping: false,
    lastError: null,
    failedStarts: 0,
    lastStartAt: null,
    failedClones: 0,
    lastCloneAt: null,
    unresponsiveMs: 0,
    canCloneWithoutLeader: false,
    lastTask: null,
    readPoolWithdrawnAt: null,
    ...overrides,
  };
}

export type SnapshotOverrides = Omit<Partial<HaSnapshot>, 'local' | 'config'> & {
  local?: Partial<LocalView>;
  config?: Partial<EffectiveDynamicConfig>;
};

export function snapshot(overrides: SnapshotOverrides = {}): HaSnapshot {
  const { local: localOverrides, config, ...rest } = overrides;
  return {
    now: Date.parse('2026-01-01T00:00:00Z'),
    cluster: cluster(),
    dcsError: null,
    ...rest,
    config: { ...defaultConfig, ...config },
    local: local(localOverrides),
  };
}
