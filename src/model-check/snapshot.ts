import { EffectiveDynamicConfig } from '../config/config.types';
import { effectiveDynamicConfig } from '../config/dynamic-config';
import { ClusterView, Member } from '../dcs/dcs.port';
import { HaSnapshot, LocalView, PeerReading } from '../ha/cluster-snapshot';
import { readingFromStatus } from '../ha/peer-probe';
import { parseStandbyNames, StandbyNames } from '../postgresql/standby-names';
import { PostgresSample, ReplicationConnection } from '../postgresql/postgres.port';
import { PostgresStateName } from '../postgresql/postgres-states';
import { syncKeyValue } from '../ha/sync/sync-key';
import { modelSiteOf } from './site-rule';
import { replayLsn, writeLsn } from './commit-columns';
import {
  ClusterModel,
  DcsRead,
  LOOP_WAIT_S,
  MAXIMUM_LAG_ON_FAILOVER,
  NODE_NAMES,
  NodeModel,
  reaches,
  RETRY_TIMEOUT_S,
  strictMode,
  SYSTEM_ID,
} from './model';

/**
 * What the real HA code reads, built from the model: the DCS view, the node's own view of itself,
 * its PostgreSQL sample and its peers' status documents. Times are instants after EPOCH.
 */
export const EPOCH = Date.parse('2026-01-01T00:00:00.000Z');

const configs = new Map<string, EffectiveDynamicConfig>();

/** The dynamic configuration as the agent derives it from `/config` (the real function, cached). */
export function configOf(c: ClusterModel): EffectiveDynamicConfig {
  const key = `${c.ttl},${c.mode},${c.pause},${c.siteRule ?? 0},${c.failsafe},${c.settings?.checkTimeline ?? ''},${c.settings?.primaryStartTimeout ?? ''},${c.settings?.strictQuorum ?? ''},${c.settings?.standbyCluster ?? ''}`;
  let config = configs.get(key);
  if (!config) {
    const document = {
      ttl: c.ttl,
      loop_wait: LOOP_WAIT_S,
      retry_timeout: RETRY_TIMEOUT_S,
      maximum_lag_on_failover: MAXIMUM_LAG_ON_FAILOVER,
      pause: c.pause,
      synchronous_mode: c.mode === 'quorum' ? 'quorum' : c.mode !== 'off',
      synchronous_mode_strict: strictMode(c),
      ...(c.siteRule ? { synchronous_site_count: c.siteRule } : {}),
      ...(c.failsafe ? { failsafe_mode: true } : {}),
      ...(c.settings?.checkTimeline ? { check_timeline: true } : {}),
      ...(c.settings?.primaryStartTimeout !== undefined
        ? { primary_start_timeout: c.settings.primaryStartTimeout }
        : {}),
      ...(c.settings?.standbyCluster ? { standby_cluster: { host: 'remote', port: 5432 } } : {}),
      postgresql: { use_pg_rewind: true, use_slots: false },
    };
    const result = effectiveDynamicConfig(document, {});
    if (result.adjustments.length > 0)
      throw new Error(`model configuration not taken as written: ${result.adjustments.join('; ')}`);
    config = result.config;
    configs.set(key, config);
  }
  return config;
}

const name = (i: number) => NODE_NAMES[i];

/** The node's tags as its configuration would give them. */
export function tagsOf(n: NodeModel): Record<string, unknown> {
  return {
    ...(n.noFailover ? { nofailover: true } : {}),
    ...(n.noSync ? { nosync: true } : {}),
    ...(n.priority !== 1 ? { failover_priority: n.priority } : {}),
  };
}

export function postgresStateName(n: NodeModel): PostgresStateName {
  if (n.op === 'demote') return 'stopping';
  if (n.op === 'start') return 'starting';
  // The postgres machine knows no hang: the postmaster runs, only the sampler's questions go unanswered.
  return n.pg === 'hung' ? 'running' : n.pg;
}

/** How long the server has not answered the sampler: a hung one past postgres_unresponsive_timeout (unresponsive.ts). */
function unresponsiveMsOf(n: NodeModel, config: EffectiveDynamicConfig): number {
  return n.pg === 'hung' ? (config.postgres_unresponsive_timeout + 1) * 1000 : 0;
}

function memberOf(n: NodeModel, i: number, c: ClusterModel): Member | null {
  if (!n.member) return null;
  const tags = tagsOf(n);
  return {
    name: name(i),
    modRevision: '1',
    data: {
      conn_url: `postgres://${name(i)}:5432/postgres`,
      api_url: `http://${name(i)}:8008/stator`,
      state: n.member.running ? 'running' : 'stopped',
      role: n.member.primary ? 'primary' : 'replica',
      version: '0.1.0',
      tags,
      ...(modelSiteOf(c, i) ? { site: modelSiteOf(c, i) } : {}),
      ...(n.member.running ? { xlog_location: n.member.wal, timeline: n.member.timeline } : {}),
      ...(c.pause ? { pause: true } : {}),
    },
  };
}

/** A mask of node indexes as `/failsafe`'s value: each member's name and API URL. */
export function failsafeMembersOf(mask: number): Record<string, string> | null {
  if (!mask) return null;
  const members: Record<string, string> = {};
  NODE_NAMES.forEach((n, i) => {
    if (mask & (1 << i)) members[n] = `http://${n}:8008/stator`;
  });
  return members;
}

export function clusterViewOf(c: ClusterModel): ClusterView {
  const f = c.failover;
  const failover = f
    ? {
        ...(f.leader >= 0 ? { leader: name(f.leader) } : {}),
        ...(f.member >= 0 ? { member: name(f.member) } : {}),
        ...(f.dueIn !== null ? { scheduled_at: new Date(EPOCH + f.dueIn).toISOString() } : {}),
        // A switchover to a site (the search's setting): the request names a leader and no member.
        ...(f.leader >= 0 && f.member < 0 && c.settings?.switchoverSite ? { site: c.settings.switchoverSite } : {}),
      }
    : null;
  return {
    leader: c.leaderKey >= 0 ? { value: name(c.leaderKey), modRevision: '1' } : null,
    members: c.nodes.map((n, i) => memberOf(n, i, c)).filter((m): m is Member => m !== null),
    initialize: SYSTEM_ID,
    config: null,
    failover: failover ? { value: failover, modRevision: '1' } : null,
    history: { value: c.history.map(([tl, lsn]) => [tl, lsn, 'no recovery target specified']), modRevision: '1' },
    sync: c.sync
      ? { value: syncKeyValue(name(c.sync.leader), c.sync.standbys.map(name), c.sync.quorum), modRevision: '1' }
      : null,
    status: {
      value: { optime: c.optime, ...(c.currentSite ? { current_site: c.currentSite } : {}) },
      modRevision: '1',
    },
    failsafe: c.failsafeKey ? { value: failsafeMembersOf(c.failsafeKey)!, modRevision: '1' } : null,
    revision: '1',
  };
}

/** The replicas streaming from `i`: running, in recovery, pointed at it, on a timeline it can send. */
export function streamingFrom(c: ClusterModel, i: number): number[] {
  const upstream = c.nodes[i];
  return c.nodes
    .map((n, j) => ({ n, j }))
    .filter(
      ({ n, j }) =>
        j !== i && n.pg === 'running' && !n.primary && n.op === 'none' && n.upstream === i && canStream(c, n, upstream),
    )
    .map(({ j }) => j);
}

/** A replica can follow an upstream on its own timeline, or on a later one forked at or after its position. */
export function canStream(c: ClusterModel, replica: NodeModel, upstream: NodeModel): boolean {
  if (upstream.pg !== 'running' || upstream.op === 'start') return false;
  if (replica.timeline === upstream.timeline) return replica.wal <= upstream.wal || !upstream.primary;
  if (replica.timeline > upstream.timeline) return false;
  const fork = c.history.find((h) => h[0] === replica.timeline);
  return fork !== undefined && replica.wal <= fork[1];
}

function sampleOf(c: ClusterModel, i: number): PostgresSample | null {
  const n = c.nodes[i];
  // A hung server's last reading stays (the sampler's answers stopped); taken as it stands.
  if ((n.pg !== 'running' && n.pg !== 'hung') || n.op === 'start') return null;
  const listed = n.primary ? safeMembers(n.standbyNames) : [];
  const listedState = standbyKind(n.standbyNames) === 'quorum' ? 'quorum' : 'sync';
  const replication: ReplicationConnection[] = n.primary
    ? streamingFrom(c, i).map((j) => ({
        usename: 'replicator',
        application_name: name(j),
        client_addr: null,
        state: 'streaming',
        sync_state: listed.includes(name(j)) ? listedState : 'async',
        sync_priority: listed.includes(name(j)) ? 1 : 0,
        write_lsn: writeLsn(c.nodes[j]),
        flush_lsn: c.nodes[j].wal,
        replay_lsn: replayLsn(c.nodes[j]),
      }))
    : [];
  return {
    inRecovery: !n.primary,
    serverVersion: 170000,
    postmasterStartTime: '2026-01-01 00:00:00+00:00',
    timeline: n.timeline,
    walPosition: n.wal,
    receivedLsn: n.primary ? null : n.wal,
    replayedLsn: n.primary ? null : n.wal,
    replayedTimestamp: null,
    replayPaused: false,
    replicationState: !n.primary && n.upstream >= 0 && canStream(c, n, c.nodes[n.upstream]) ? 'streaming' : null,
    latestEndLsn: null,
    replication,
    synchronousStandbyNames: n.standbyNames,
    synchronousCommit: c.settings?.synchronousCommit ?? 'on',
    systemIdentifier: SYSTEM_ID,
    pendingRestart: {},
  };
}

/** synchronous_standby_names parsed by the real parser, once per distinct text (frozen: shared by every caller); null when it does not parse. */
const parsedNames = new Map<string, StandbyNames | null>();

export function parsedStandbyNames(standbyNames: string): StandbyNames | null {
  let parsed = parsedNames.get(standbyNames);
  if (parsed === undefined) {
    try {
      const names = parseStandbyNames(standbyNames);
      parsed = Object.freeze({ ...names, members: Object.freeze([...names.members]) as string[] });
    } catch {
      parsed = null;
    }
    if (parsedNames.size > 10_000) parsedNames.clear();
    parsedNames.set(standbyNames, parsed);
  }
  return parsed;
}

export function standbyKind(standbyNames: string): string {
  return parsedStandbyNames(standbyNames)?.kind ?? 'off';
}

export function safeMembers(standbyNames: string): string[] {
  return parsedStandbyNames(standbyNames)?.members ?? [];
}

function localOf(c: ClusterModel, i: number): LocalView {
  const n = c.nodes[i];
  const busy = n.op === 'none' ? null : n.op;
  return {
    name: name(i),
    tags: tagsOf(n),
    // The node's own `site` setting, with the members placed in sites.
    ...(modelSiteOf(c, i) ? { site: modelSiteOf(c, i) } : {}),
    pgState: postgresStateName(n),
    busy,
    role: n.role,
    leadership: n.leader ? 'leader' : 'follower',
    // The load-balancer drain before a promotion is time inside one step of the model: not modelled.
    readPoolWithdrawnAt: null,
    dataDir: {
      state: 'initialized',
      systemIdentifier: SYSTEM_ID,
      timeline: n.timeline,
      checkpointLsn: n.wal,
      standbySignal: n.role === 'replica',
      clusterState: n.primary ? 'in production' : 'in archive recovery',
    },
    sample: sampleOf(c, i),
    upstream: n.upstream >= 0 ? name(n.upstream) : null,
    notStreamingSince: 0,
    bootstrapping: false,
    lastError: null,
    failedStarts: 0,
    lastStartAt: null,
    failedClones: 0,
    lastCloneAt: null,
    unresponsiveMs: unresponsiveMsOf(n, configOf(c)),
    watchdogFailed: n.watchdogFailed ? 'watchdog device /dev/watchdog is not usable' : null,
    canCloneWithoutLeader: false,
    lastTask: null,
  };
}

/**
 * The status documents of the peers probed (`targets`; by default those whose member key lives), read by the real
 * readingFromStatus: only an agent that runs and is not cut off from this node answers, xlog only while PostgreSQL runs.
 */
export function peerReadings(
  c: ClusterModel,
  i: number,
  targets: number[] = c.nodes.flatMap((n, j) => (n.member ? [j] : [])),
): PeerReading[] {
  return targets
    .filter((j) => j !== i)
    .map((j) => ({ n: c.nodes[j], j }))
    .map(({ n, j }) => {
      if (!reaches(c, i, j)) return { name: name(j), reachable: false };
      const running = postgresStateName(n) === 'running';
      const xlog = !running
        ? undefined
        : n.primary
          ? { location: n.wal }
          : { received_location: n.wal, replayed_location: n.wal };
      return readingFromStatus(name(j), {
        role: n.role,
        timeline: n.timeline,
        tags: tagsOf(n),
        // As the status document: the member's `site` (status-document.ts), with the members placed in sites.
        ...(modelSiteOf(c, j) ? { site: modelSiteOf(c, j) } : {}),
        xlog,
        ...(n.watchdogFailed ? { watchdog_failed: true } : {}),
      });
    });
}

/** What node reads from the DCS now. */
export function dcsRead(c: ClusterModel): DcsRead {
  const { leaderKey, sync, failover, optime, currentSite, history, pause, mode, ttl, failsafeKey } = c;
  return {
    leaderKey,
    sync,
    failover,
    optime,
    currentSite,
    history,
    pause,
    mode,
    ttl,
    failsafeKey,
    members: c.nodes.map((n) => n.member),
  };
}

/** The cluster as a read of the DCS shows it: the DCS's part from the read, the nodes' own part as they are. */
export function asRead(c: ClusterModel, read: DcsRead): ClusterModel {
  return { ...c, ...read, nodes: c.nodes.map((n, j) => ({ ...n, member: read.members[j] })) };
}

/**
 * The snapshot node `i` decides on: the DCS as it reads it now (null when it cannot), or as it read
 * it earlier (`stale`): the sample and peers are taken now.
 */
export function snapshotOf(c: ClusterModel, i: number, stale: DcsRead | null = null): HaSnapshot {
  const reachable = c.quorum && !c.nodes[i].dcsCut;
  const seen = stale ? asRead(c, stale) : c;
  return {
    now: EPOCH,
    config: configOf(seen),
    cluster: stale || reachable ? clusterViewOf(seen) : null,
    dcsError: stale || reachable ? null : 'etcd cluster unreachable',
    local: localOf(c, i),
    failsafeMembers: failsafeMembersOf(c.nodes[i].knownFailsafe),
    // FailsafeState.leaderAccepted: the leader whose call this node accepted less than a ttl ago.
    failsafeLeader: c.nodes[i].acceptedLeft > 0 ? name(c.nodes[i].acceptedLeader) : null,
  };
}
