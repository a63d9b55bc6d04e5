import { parseLsn } from '../common/lsn';
import { LogicalSlotState, PhysicalSlotState, PostgresSample, ReplicationConnection } from './postgres.port';

/**
 * The one query behind `sample()`. Functions that raise on the "wrong" side of recovery
 * (pg_walfile_name, pg_is_wal_replay_paused) sit behind CASE, which PostgreSQL evaluates lazily.
 *
 * - timeline: on a primary, from the name of the current WAL file (pg_control_checkpoint() still shows the
 *   old timeline until the first checkpoint after a promotion); on a replica, the WAL receiver's
 *   received_tli while it streams, else the latest checkpoint's (restartpoint's) timeline.
 * - pending restart: old = current_setting (the running value, with units as written); new = the last
 *   not-yet-applied line for it in pg_file_settings, or, when there is none (e.g. set by ALTER SYSTEM and
 *   read back differently), pg_settings.reset_val.
 * - timestamps use Python's `str(datetime)` shape in the session time zone, as Patroni prints them.
 */
export const SAMPLE_SQL = `
SELECT
  pg_catalog.pg_is_in_recovery() AS in_recovery,
  pg_catalog.current_setting('server_version_num')::int AS server_version,
  pg_catalog.to_char(pg_catalog.pg_postmaster_start_time(), 'YYYY-MM-DD HH24:MI:SS.USTZH:TZM') AS postmaster_start_time,
  CASE WHEN pg_catalog.pg_is_in_recovery() THEN NULL
       ELSE ('x' || pg_catalog.substr(pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()), 1, 8))::bit(32)::int
  END AS wal_file_timeline,
  CASE WHEN pg_catalog.pg_is_in_recovery() THEN NULL ELSE pg_catalog.pg_current_wal_flush_lsn()::text END AS flush_lsn,
  pg_catalog.pg_last_wal_receive_lsn()::text AS receive_lsn,
  pg_catalog.pg_last_wal_replay_lsn()::text AS replay_lsn,
  pg_catalog.to_char(pg_catalog.pg_last_xact_replay_timestamp(), 'YYYY-MM-DD HH24:MI:SS.USTZH:TZM') AS replay_timestamp,
  CASE WHEN pg_catalog.pg_is_in_recovery() THEN pg_catalog.pg_is_wal_replay_paused() ELSE false END AS replay_paused,
  receiver.status AS receiver_status,
  pg_catalog.current_setting('restore_command') <> '' AS restores_wal,
  receiver.received_tli,
  receiver.written_lsn::text AS written_lsn,
  receiver.latest_end_lsn::text AS latest_end_lsn,
  (SELECT timeline_id FROM pg_catalog.pg_control_checkpoint()) AS checkpoint_timeline,
  (SELECT system_identifier::text FROM pg_catalog.pg_control_system()) AS system_identifier,
  COALESCE((
    SELECT pg_catalog.json_agg(pg_catalog.json_build_object(
      'usename', usename, 'application_name', application_name, 'client_addr', pg_catalog.host(client_addr),
      'state', state, 'sync_state', sync_state, 'sync_priority', sync_priority,
      'write_lsn', write_lsn::text, 'flush_lsn', flush_lsn::text, 'replay_lsn', replay_lsn::text) ORDER BY application_name, pid)
    FROM pg_catalog.pg_stat_replication), '[]'::json) AS replication,
  pg_catalog.current_setting('synchronous_standby_names') AS synchronous_standby_names,
  pg_catalog.current_setting('synchronous_commit') AS synchronous_commit,
  COALESCE((
    SELECT pg_catalog.json_object_agg(s.name, pg_catalog.json_build_object(
      'old_value', pg_catalog.current_setting(s.name),
      'new_value', COALESCE((
        SELECT f.setting FROM pg_catalog.pg_file_settings f
        WHERE f.name = s.name AND NOT f.applied ORDER BY f.seqno DESC LIMIT 1), s.reset_val)))
    FROM pg_catalog.pg_settings s WHERE s.pending_restart), '{}'::json) AS pending_restart,
  COALESCE((
    SELECT pg_catalog.json_agg(pg_catalog.json_build_object('name', slot_name, 'active', active, 'lost', wal_status = 'lost',
      'xmin', xmin IS NOT NULL, 'restart_lsn', restart_lsn::text) ORDER BY slot_name)
    FROM pg_catalog.pg_replication_slots WHERE slot_type = 'physical'), '[]'::json) AS physical_slots,
  COALESCE((
    SELECT pg_catalog.json_agg(pg_catalog.json_build_object('name', slot_name, 'active', active, 'database', database, 'plugin', plugin) ORDER BY slot_name)
    FROM pg_catalog.pg_replication_slots WHERE slot_type = 'logical'), '[]'::json) AS logical_slots
FROM (SELECT 1) AS one
LEFT JOIN pg_catalog.pg_stat_wal_receiver AS receiver ON true`;

/** Patroni's replication_state: a replica streaming, or else restoring WAL by restore_command ('in archive recovery'); none for a primary. */
export function replicationStateOf(
  inRecovery: boolean,
  receiverStatus: string | null,
  restoresWal: boolean,
): 'streaming' | 'in archive recovery' | null {
  if (!inRecovery) return null;
  if (receiverStatus === 'streaming') return 'streaming';
  return restoresWal ? 'in archive recovery' : null;
}

export interface SampleRow {
  in_recovery: boolean;
  server_version: number;
  postmaster_start_time: string;
  wal_file_timeline: number | null;
  flush_lsn: string | null;
  receive_lsn: string | null;
  replay_lsn: string | null;
  replay_timestamp: string | null;
  replay_paused: boolean;
  receiver_status: string | null;
  restores_wal: boolean;
  received_tli: number | null;
  written_lsn: string | null;
  latest_end_lsn: string | null;
  checkpoint_timeline: number;
  system_identifier: string;
  replication: (Omit<ReplicationConnection, 'write_lsn' | 'flush_lsn' | 'replay_lsn'> &
    Record<'write_lsn' | 'flush_lsn' | 'replay_lsn', string | null>)[];
  synchronous_standby_names: string;
  synchronous_commit: string;
  pending_restart: Record<string, { old_value: string; new_value: string }>;
  physical_slots: (Omit<PhysicalSlotState, 'restartLsn'> & { restart_lsn: string | null })[];
  logical_slots: LogicalSlotState[];
}

/** Python's `str(datetime)` drops a zero microsecond part; Patroni's timestamps do too. */
function pythonTimestamp(text: string | null): string | null {
  return text === null ? null : text.replace(/\.000000(?=[+-])/, '');
}

function lsnOrNull(text: string | null): number | null {
  return text === null ? null : parseLsn(text);
}

/** The sampler's reading, from the one row of SAMPLE_SQL. */
export function sampleOf(row: SampleRow): PostgresSample {
  const receivedLsn = lsnOrNull(row.written_lsn) ?? lsnOrNull(row.receive_lsn);
  const replayedLsn = lsnOrNull(row.replay_lsn);
  const walPosition = row.in_recovery ? Math.max(receivedLsn ?? 0, replayedLsn ?? 0) : parseLsn(row.flush_lsn ?? '0/0');
  const timeline = row.in_recovery
    ? row.received_tli && row.received_tli > 0
      ? row.received_tli
      : row.checkpoint_timeline
    : (row.wal_file_timeline ?? row.checkpoint_timeline);
  return {
    inRecovery: row.in_recovery,
    serverVersion: row.server_version,
    postmasterStartTime: pythonTimestamp(row.postmaster_start_time) ?? '',
    timeline,
    walPosition,
    receivedLsn: row.in_recovery ? receivedLsn : null,
    replayedLsn: row.in_recovery ? replayedLsn : null,
    // A promoted primary still answers with its last replayed commit; Patroni shows it for replicas only.
    replayedTimestamp: row.in_recovery ? pythonTimestamp(row.replay_timestamp) : null,
    replayPaused: row.replay_paused,
    replicationState: replicationStateOf(row.in_recovery, row.receiver_status, row.restores_wal),
    latestEndLsn: row.in_recovery ? lsnOrNull(row.latest_end_lsn) : null,
    replication: row.replication.map((connection) => ({
      ...connection,
      write_lsn: lsnOrNull(connection.write_lsn),
      flush_lsn: lsnOrNull(connection.flush_lsn),
      replay_lsn: lsnOrNull(connection.replay_lsn),
    })),
    synchronousStandbyNames: row.synchronous_standby_names,
    synchronousCommit: row.synchronous_commit,
    systemIdentifier: row.system_identifier,
    pendingRestart: row.pending_restart,
    physicalSlots: row.physical_slots.map(({ restart_lsn, ...slot }) => ({
      ...slot,
      restartLsn: lsnOrNull(restart_lsn),
    })),
    logicalSlots: row.logical_slots,
  };
}
