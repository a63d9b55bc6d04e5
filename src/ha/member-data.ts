import { StatorConfig } from '../config/config.types';
import { MemberData } from '../dcs/dcs.port';
import { PostgresStateName, POSTGRES_STATES } from '../postgresql/postgres-states';
import { PostgresSample } from '../postgresql/postgres.port';
import { RoleName } from './role.machine';
import { ScheduledRestart } from './node-view';
import { publishedRestart } from './scheduled-restart';
import { PATRONI_REFERENCE_VERSION } from '../version';

export interface MemberFacts {
  config: StatorConfig;
  /** Stator's own version. */
  version: string;
  /** The runtime the agent runs on (`node 24.21.0`). */
  runtime?: string;
  pgState: PostgresStateName;
  role: RoleName;
  sample: PostgresSample | null;
  tags: Record<string, unknown>;
  /** Between a promotion and its first checkpoint pg_control still names the old timeline. */
  checkpointAfterPromotePending: boolean;
  scheduledRestart: ScheduledRestart | null;
  paused: boolean;
  /** Where a primary stopped cleanly ends its WAL, shown while its server is down (see NodeActors). */
  shutdownCheckpoint: { lsn: number; timeline?: number } | null;
}

/**
 * The member key's value, as the reference writes it. `version` is what a Patroni peer compares with
 * Patroni releases: with `compat: patroni` the reference release Stator implements, so peers take the
 * current paths (checkpoint_after_promote, no `/optime/leader`); natively Stator's own version, which a
 * Patroni peer would read as a pre-1.5.6 Patroni (see docs/migration.md). `stator_version`
 * says which agent wrote the key, in both modes, and `stator_runtime` what it runs on.
 */
export function memberData(facts: MemberFacts): MemberData {
  const { config, sample, pgState } = facts;
  const apiPath = config.compat === 'patroni' ? 'patroni' : 'stator';
  const data: MemberData = {
    conn_url: `postgres://${config.postgresql.connect_address}/postgres`,
    api_url: `${config.restapi.certfile ? 'https' : 'http'}://${config.restapi.connect_address}/${apiPath}`,
    state: POSTGRES_STATES[pgState].text,
    role: facts.role,
    version: config.compat === 'patroni' ? PATRONI_REFERENCE_VERSION : facts.version,
    stator_version: facts.version,
  };
  if (config.site) data.site = config.site;
  if (facts.runtime) data.stator_runtime = facts.runtime;
  // A pooler or proxy in front of this server (`postgresql.proxy_address`), where the reference puts it.
  if (config.postgresql.proxy_address) data.proxy_url = `postgres://${config.postgresql.proxy_address}/postgres`;
  if (Object.keys(facts.tags).length > 0) data.tags = facts.tags;
  if (sample && pgState === 'running') {
    if (Object.keys(sample.pendingRestart).length > 0) {
      data.pending_restart = true;
      data.pending_restart_reason = sample.pendingRestart;
    }
    data.xlog_location = sample.walPosition;
    if (sample.inRecovery) {
      if (sample.replayedLsn !== null) data.replay_lsn = sample.replayedLsn;
      if (sample.receivedLsn !== null) data.receive_lsn = sample.receivedLsn;
      if (sample.replicationState) data.replication_state = sample.replicationState;
    }
    data.timeline = sample.timeline;
  } else if (facts.shutdownCheckpoint) {
    // Just past the start of the shutdown checkpoint record: a member stopped before it never has it.
    data.xlog_location = facts.shutdownCheckpoint.lsn + 1;
    if (facts.shutdownCheckpoint.timeline) data.timeline = facts.shutdownCheckpoint.timeline;
  }
  if (facts.checkpointAfterPromotePending) data.checkpoint_after_promote = false;
  if (facts.scheduledRestart) data.scheduled_restart = publishedRestart(facts.scheduledRestart);
  if (facts.paused) data.pause = true;
  return data;
}
