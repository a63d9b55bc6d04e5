import { NodeView } from '../ha/node-view';
import { synchronousRoleOf } from './cluster-document';
import { isUnresponsive, unresponsiveForMs } from '../ha/unresponsive';
import { publishedRestart } from '../ha/scheduled-restart';
import { POSTGRES_STATES } from '../postgresql/postgres-states';

export interface ApiIdentity {
  scope: string;
  version: string;
  /** `stator`, or `patroni` in compatibility mode: the key of the identity object. */
  productKey: 'stator' | 'patroni';
}

/** The DCS view is trusted for `ttl` seconds after it was read, as the reference's cache is. */
export function clusterViewIsFresh(view: NodeView, now: number): boolean {
  return view.cluster !== null && now - view.dcsLastSeen <= view.config.ttl * 1000;
}

/**
 * The node status document of spec 2.1 (`GET /stator`, and the body of every health GET), keys in
 * the reference's order. Built from memory only.
 */
export function buildStatusDocument(view: NodeView, identity: ApiIdentity, now: number): Record<string, unknown> {
  const document: Record<string, unknown> = { state: POSTGRES_STATES[view.pgState].text };
  const sample = view.pgState === 'running' ? view.sample : null;
  if (sample) {
    document.postmaster_start_time = sample.postmasterStartTime;
    // In a standby cluster a recovering node shows its own role: standby_leader or replica (reference 2.1, note 1).
    document.role = !sample.inRecovery ? 'primary' : view.role === 'standby_leader' ? 'standby_leader' : 'replica';
    document.server_version = sample.serverVersion;
    document.xlog = sample.inRecovery
      ? {
          received_location: sample.receivedLsn ?? sample.replayedLsn ?? 0,
          replayed_location: sample.replayedLsn ?? 0,
          replayed_timestamp: sample.replayedTimestamp,
          paused: sample.replayPaused,
        }
      : { location: sample.walPosition };
    const synchronousRole = sample.inRecovery && view.cluster ? synchronousRoleOf(view.cluster, view.name) : null;
    if (synchronousRole) document[synchronousRole] = true;
    document.timeline = sample.timeline;
    if (sample.inRecovery && sample.replicationState) document.replication_state = sample.replicationState;
    if (sample.replication.length > 0) {
      // pg_stat_replication's columns as the reference shows them; the positions are for the leader's own use.
      document.replication = sample.replication.map(
        ({ usename, application_name, client_addr, state, sync_state, sync_priority }) => ({
          usename,
          application_name,
          client_addr,
          state,
          sync_state,
          sync_priority,
        }),
      );
    }
  } else {
    document.role = view.role;
  }
  const fresh = clusterViewIsFresh(view, now);
  if (view.config.pause) document.pause = true;
  if (!fresh || !view.cluster?.leader) document.cluster_unlocked = true;
  if (view.failsafeActive) document.failsafe_mode_is_active = true;
  document.dcs_last_seen = Math.floor(view.dcsLastSeen / 1000);
  if (Object.keys(view.tags).length > 0) document.tags = view.tags;
  const sysid = sample?.systemIdentifier ?? view.dataDir?.systemIdentifier;
  if (sysid) document.database_system_identifier = sysid;
  if (sample && Object.keys(sample.pendingRestart).length > 0) {
    document.pending_restart = true;
    document.pending_restart_reason = sample.pendingRestart;
  }
  const unresponsiveMs = unresponsiveForMs(view.pgState, view.pgAnsweredAt, now);
  if (isUnresponsive(unresponsiveMs, view.config.postgres_unresponsive_timeout)) {
    // Stator's own keys: the reading above is the last one PostgreSQL gave, this long ago.
    document.postgres_unresponsive = true;
    document.sample_age = Math.floor((now - view.sampleAt) / 1000);
  }
  document[identity.productKey] = { version: identity.version, scope: identity.scope, name: view.name };
  if (view.site) document.site = view.site;
  if (view.scheduledRestart) document.scheduled_restart = publishedRestart(view.scheduledRestart);
  if (view.watchdogFailed) document.watchdog_failed = true;
  return document;
}
