import { NodeView } from '../ha/node-view';
import { readPoolWithdrawal } from '../ha/read-pool';
import { synchronousRoleOf } from './cluster-document';
import { isUnresponsive, unresponsiveForMs } from '../ha/unresponsive';
import { MAX_VALUE_TEXT_LENGTH, readLagBytes } from './request-values';
import { clusterViewIsFresh } from './status-document';

/** Thrown for a query the reference would silently ignore but Stator rejects (deliberate deviation). */
export class BadHealthQuery extends Error {}

/**
 * `lag` as bytes (reference-behavior 1.3, lag parsing; see readLagBytes). Anything else is refused
 * with 400 where the reference would silently mean "no limit" (deliberate deviation).
 */
export function parseLag(text: string): number {
  const bytes = readLagBytes(text);
  if (bytes !== null) return bytes;
  const shown = text.length > 40 ? `${text.slice(0, 37)}...` : text;
  throw new BadHealthQuery(
    `lag: must be a number of bytes or a size such as 16MB (units B, kB, MB, GB, TB; at most ${MAX_VALUE_TEXT_LENGTH} characters), got "${shown}"`,
  );
}

export interface HealthQuery {
  lag?: string;
  replication_state?: string;
  [tag: string]: string | undefined;
}

/**
 * The status code of a health-check path (reference-behavior 1.3), from memory. Paths are exact
 * (a deliberate deviation from the reference's substring matching).
 */
export function healthStatus(path: string, query: HealthQuery, view: NodeView, now: number): number {
  const ok = (condition: boolean) => (condition ? 200 : 503);
  // A server that answers nothing is no target for anyone, whatever its last reading said.
  const hung = isUnresponsive(
    unresponsiveForMs(view.pgState, view.pgAnsweredAt, now),
    view.config.postgres_unresponsive_timeout,
  );
  const running = view.pgState === 'running' && !hung;
  const sample = running ? view.sample : null;
  const role = sample ? (sample.inRecovery ? 'replica' : 'primary') : view.role;
  const fresh = clusterViewIsFresh(view, now);
  const isLeader = view.leadership === 'leader' && view.lockValidUntil > now && !hung;

  // A standby cluster's leader replicates from the remote primary: the leader, but no write target.
  const standbyCluster = view.config.standby_cluster !== null;
  let leaderOk = false;
  let primaryOk = false;
  let standbyLeaderOk = false;
  if (!fresh && view.config.pause && !hung) {
    leaderOk = role === 'primary' || view.role === 'standby_leader';
    primaryOk = role === 'primary';
    standbyLeaderOk = view.role === 'standby_leader';
  } else if (isLeader && standbyCluster) {
    leaderOk = true;
    standbyLeaderOk = running && role === 'replica';
  } else if (isLeader) {
    leaderOk = true;
    // A leader demoting itself (switchover) is no longer a write target, though it still holds the lock while it stops.
    primaryOk = view.role !== 'demoted';
  }

  const maxLag = query.lag !== undefined ? parseLag(query.lag) : null;
  const replicaOk = () => {
    if (view.tags.noloadbalance === true || !running || role !== 'replica' || !sample) return false;
    // About to be primary: out of the read pool before promotion starts, so no read reaches a new primary.
    if (readPoolWithdrawal(view.leadership, view.cluster, view.name, now) !== null) return false;
    if (query.replication_state !== undefined && query.replication_state !== (sample.replicationState ?? undefined))
      return false;
    if (maxLag !== null) {
      const optime = Math.max(view.cluster?.status?.value.optime ?? 0, sample.latestEndLsn ?? 0);
      if (optime > 0 && optime > (sample.replayedLsn ?? 0) + maxLag) return false;
    }
    return true;
  };
  const tagsMatch = () =>
    Object.entries(query)
      .filter(([key]) => key.startsWith('tag_'))
      .every(([key, expected]) => {
        // Own tags only: `tag_constructor` must not find Object's constructor.
        const name = key.slice(4);
        const actual = Object.hasOwn(view.tags, name) ? view.tags[name] : undefined;
        if (actual === undefined) return false;
        return (typeof actual === 'string' ? actual : String(actual).toLowerCase()) === expected;
      });
  const withTags = (code: number) => (code === 200 && !tagsMatch() ? 503 : code);
  // A replica `/sync` names: by the last fresh view of the DCS, as the reference reads its cache.
  const synchronousRole =
    role === 'replica' && fresh && view.cluster ? synchronousRoleOf(view.cluster, view.name) : null;
  const syncStandby = synchronousRole === 'sync_standby';
  const quorumStandby = synchronousRole === 'quorum_standby';

  switch (path) {
    case '/':
    case '/primary':
    case '/master':
    case '/read-write':
      return ok(primaryOk);
    case '/standby-leader':
    case '/standby_leader':
      return ok(standbyLeaderOk);
    case '/leader':
      return ok(leaderOk);
    case '/replica':
      return withTags(ok(replicaOk()));
    case '/read-only':
      return withTags(primaryOk || standbyLeaderOk ? 200 : ok(replicaOk()));
    case '/health':
      return withTags(ok(running));
    case '/sync':
    case '/synchronous':
      return withTags(ok(fresh && syncStandby && replicaOk()));
    case '/read-only-sync':
    case '/read-only-synchronous':
      return withTags(ok(fresh && (primaryOk || standbyLeaderOk || (syncStandby && replicaOk()))));
    case '/quorum':
      return withTags(ok(fresh && quorumStandby && replicaOk()));
    case '/read-only-quorum':
      return withTags(ok(fresh && (primaryOk || standbyLeaderOk || (quorumStandby && replicaOk()))));
    case '/async':
    case '/asynchronous':
      return withTags(ok(fresh && !syncStandby && !quorumStandby && replicaOk()));
    case '/liveness':
      return liveness(view, now);
    case '/readiness':
      return hung ? 503 : readiness(view, query, now, isLeader);
    default:
      throw new Error(`not a health path: ${path}`);
  }
}

/** The HA loop ran recently enough: within ttl on a running primary, 2*ttl elsewhere; always while paused. */
function liveness(view: NodeView, now: number): number {
  if (view.config.pause) return 200;
  const primary = view.pgState === 'running' && view.sample !== null && !view.sample.inRecovery;
  const threshold = (primary ? 1 : 2) * view.config.ttl * 1000;
  return view.lastCycleAt + threshold > now ? 200 : 503;
}

function readiness(view: NodeView, query: HealthQuery, now: number, isLeader: boolean): number {
  if (isLeader) return 200;
  const sample = view.sample;
  if (view.pgState !== 'running' || !sample) return 503;
  if (sample.replicationState !== 'streaming') return 503;
  const optime = Math.max(
    clusterViewIsFresh(view, now) ? (view.cluster?.status?.value.optime ?? 0) : 0,
    sample.latestEndLsn ?? 0,
  );
  if (optime === 0) return 503;
  const limit = query.lag !== undefined ? parseLag(query.lag) : view.config.maximum_lag_on_failover;
  const position = query.mode === 'write' ? (sample.receivedLsn ?? 0) : (sample.replayedLsn ?? 0);
  return optime - position > limit ? 503 : 200;
}

export const HEALTH_PATHS = [
  '/',
  '/primary',
  '/master',
  '/read-write',
  '/standby-leader',
  '/standby_leader',
  '/leader',
  '/replica',
  '/read-only',
  '/health',
  '/sync',
  '/synchronous',
  '/read-only-sync',
  '/read-only-synchronous',
  '/quorum',
  '/read-only-quorum',
  '/async',
  '/asynchronous',
  '/liveness',
  '/readiness',
];
