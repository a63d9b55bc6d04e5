import { Client, ClientConfig, QueryResult } from 'pg';
import { SerialConnection } from './serial-connection';
import { PostgresqlConfig } from '../config/config.types';
import { LocalConnection, localConnection, toClientConfig } from './local-connection';
import { formatLsn, parseLsn } from '../common/lsn';
import { isIgnoredSlot, PermanentSlot, SlotMatcher } from '../config/slots-config';
import { LogicalSlotState, PhysicalSlotState, PostgresQuery, PostgresSample, ReplicationConnection, SlotChanges } from './postgres.port';
import { physicalSlotsInOrder } from './physical-slots';

/** `wal_segment_size` as SHOW prints it (`16MB`, `1GB`) in bytes. */
function parseWalSegmentSize(text: string): number {
  const match = /^(\d+)\s*(kB|MB|GB)?$/.exec(text.trim());
  if (!match) return 16 * 1024 * 1024;
  return Number(match[1]) * ({ kB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 } as Record<string, number>)[match[2] ?? 'MB'];
}

/** How long creating a logical slot may wait for the transactions running at that moment. */
const LOGICAL_SLOT_CREATE_TIMEOUT_MS = 10_000;

export interface PgQueryOptions {
  /** Server-side `statement_timeout`, and (plus a margin) the client-side wait for any answer. Default 2000. */
  statementTimeoutMs?: number;
  connectTimeoutMs?: number;
}

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
const SAMPLE_SQL = `
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
export function replicationStateOf(inRecovery: boolean, receiverStatus: string | null, restoresWal: boolean): 'streaming' | 'in archive recovery' | null {
  if (!inRecovery) return null;
  if (receiverStatus === 'streaming') return 'streaming';
  return restoresWal ? 'in archive recovery' : null;
}

interface SampleRow {
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
  replication: (Omit<ReplicationConnection, 'write_lsn' | 'flush_lsn' | 'replay_lsn'> & Record<'write_lsn' | 'flush_lsn' | 'replay_lsn', string | null>)[];
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

/**
 * SQL against the local server as the superuser over TCP, on two connections: the sampler's, so
 * that a reading is never queued behind a CHECKPOINT or a slot change and a server that stops
 * answering shows as one, and one for everything else.
 */
export class PgQuery implements PostgresQuery {
  private readonly main: SerialConnection;
  private readonly sampling: SerialConnection;

  private readonly clientConfig: ClientConfig;

  constructor(connection: LocalConnection, options: PgQueryOptions = {}) {
    const settings = { statementTimeoutMs: options.statementTimeoutMs ?? 2000, connectTimeoutMs: options.connectTimeoutMs ?? 2000 };
    this.clientConfig = toClientConfig(connection);
    this.main = new SerialConnection(this.clientConfig, settings);
    // As Patroni 4.1.4: the monitoring query, run every second, stays out of pg_stat_statements (its GC is costly).
    this.sampling = new SerialConnection({ ...this.clientConfig, options: '-c pg_stat_statements.track=none' }, settings);
  }

  static fromConfig(config: PostgresqlConfig, options?: PgQueryOptions): PgQuery {
    return new PgQuery(localConnection(config), options);
  }

  /** One reading of the server in one round trip. */
  async sample(): Promise<PostgresSample> {
    const [row] = lastRows<SampleRow>(await this.sampling.run(SAMPLE_SQL));
    const receivedLsn = lsnOrNull(row.written_lsn) ?? lsnOrNull(row.receive_lsn);
    const replayedLsn = lsnOrNull(row.replay_lsn);
    const walPosition = row.in_recovery
      ? Math.max(receivedLsn ?? 0, replayedLsn ?? 0)
      : parseLsn(row.flush_lsn ?? '0/0');
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
      physicalSlots: row.physical_slots.map(({ restart_lsn, ...slot }) => ({ ...slot, restartLsn: lsnOrNull(restart_lsn) })),
      logicalSlots: row.logical_slots,
    };
  }

  /** CHECKPOINT, with its own (longer) timeout: a checkpoint writes every dirty buffer. */
  async checkpoint(timeoutMs = 60_000): Promise<void> {
    const timeout = Math.max(1, Math.round(timeoutMs));
    await this.main.run(`SET statement_timeout = ${timeout}; CHECKPOINT; RESET statement_timeout`, undefined, timeout + 1000);
  }

  /**
   * Creates the missing physical slots (reserving WAL at once) and drops the other physical slots.
   * A slot that is in use (its standby still streams) is left for a later call rather than
   * terminating the walsender.
   */
  async syncPhysicalSlots(names: string[], keep: SlotMatcher[] = [], known?: PhysicalSlotState[]): Promise<SlotChanges> {
    if (known && physicalSlotsInOrder(names, keep, known)) return { created: [], dropped: [] };
    // One statement (the leader runs this every cycle): the CTE creates the missing slots, exactly
    // once; the unwanted ones are read from the same snapshot, which the new slots cannot be among.
    const rows = await this.query<{ change: 'created' | 'unwanted' | 'lost'; slot_name: string }>(
      `WITH wanted AS (SELECT pg_catalog.unnest($1::text[]) AS slot_name),
       created AS (
         SELECT (pg_catalog.pg_create_physical_replication_slot(w.slot_name, true)).slot_name
         FROM wanted w WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_replication_slots s WHERE s.slot_name = w.slot_name))
       SELECT 'created' AS change, slot_name FROM created
       UNION ALL
       SELECT 'unwanted', slot_name FROM pg_catalog.pg_replication_slots
       WHERE slot_type = 'physical' AND NOT active AND NOT (slot_name = ANY($1::text[]))
       UNION ALL
       SELECT 'lost', slot_name FROM pg_catalog.pg_replication_slots
       WHERE slot_type = 'physical' AND NOT active AND wal_status = 'lost' AND slot_name = ANY($1::text[])`,
      [names],
    );
    const created = rows.filter((row) => row.change === 'created');
    const unwanted = rows.filter((row) => row.change !== 'created');
    const drop = unwanted.map((slot) => slot.slot_name).filter((name) => !isIgnoredSlot(keep, { name, type: 'physical' }));
    const lost = rows.filter((row) => row.change === 'lost' && drop.includes(row.slot_name)).map((row) => row.slot_name);
    const dropped =
      drop.length === 0
        ? []
        : await this.query<{ slot_name: string }>(
            `SELECT slot_name, pg_catalog.pg_drop_replication_slot(slot_name) FROM pg_catalog.pg_replication_slots
             WHERE slot_type = 'physical' AND NOT active AND slot_name = ANY($1::text[])`,
            [drop],
          );
    const droppedNames = dropped.map((row) => row.slot_name);
    // As Patroni 4.1: a wanted slot whose WAL is lost is useless to its consumer; it starts again from now.
    const recreate = lost.filter((name) => droppedNames.includes(name));
    const recreated =
      recreate.length === 0
        ? []
        : await this.query<{ slot_name: string }>('SELECT (pg_catalog.pg_create_physical_replication_slot(n, true)).slot_name FROM pg_catalog.unnest($1::text[]) AS n', [recreate]);
    return {
      created: [...created.map((row) => row.slot_name), ...recreated.map((row) => row.slot_name)],
      dropped: droppedNames,
      ...(recreate.length > 0 ? { lost: recreate } : {}),
    };
  }

  async physicalSlotPositions(names: string[]): Promise<Record<string, number>> {
    return this.slotPositions('physical', names);
  }

  async advanceSlots(positions: Record<string, number>): Promise<void> {
    const names = Object.keys(positions);
    if (names.length === 0) return;
    // On a standby, advancing is capped at the replay position by PostgreSQL itself.
    await this.query(
      `SELECT pg_catalog.pg_replication_slot_advance(s.slot_name, w.lsn)
       FROM ROWS FROM (pg_catalog.unnest($1::text[]), pg_catalog.unnest($2::pg_lsn[])) AS w(slot_name, lsn)
       JOIN pg_catalog.pg_replication_slots s ON s.slot_name = w.slot_name
       WHERE NOT s.active AND s.xmin IS NULL AND s.restart_lsn IS NOT NULL AND s.restart_lsn < w.lsn`,
      [names, names.map((name) => formatLsn(positions[name]))],
    );
  }

  async dropIdleSlots(names: string[], type: 'physical' | 'logical', holdingXmin = false): Promise<string[]> {
    if (names.length === 0) return [];
    const rows = await this.query<{ slot_name: string }>(
      `SELECT slot_name, pg_catalog.pg_drop_replication_slot(slot_name) FROM pg_catalog.pg_replication_slots
       WHERE slot_type = $2 AND NOT active AND slot_name = ANY($1::text[]) AND (NOT $3 OR xmin IS NOT NULL)`,
      [names, type, holdingXmin],
    );
    return rows.map((row) => row.slot_name);
  }

  async oldestWalPosition(): Promise<number> {
    const [row] = await this.query<{ segment: string | null; size: string }>(
      `SELECT min(name) AS segment, pg_catalog.current_setting('wal_segment_size') AS size
       FROM pg_catalog.pg_ls_waldir() WHERE name ~ '^[0-9A-F]{24}$'`,
    );
    if (!row?.segment) return 0;
    // TTTTTTTT LLLLLLLL SSSSSSSS: the segment's number is log * (4 GiB / size) + seg.
    const size = parseWalSegmentSize(row.size);
    const log = parseInt(row.segment.slice(8, 16), 16);
    const seg = parseInt(row.segment.slice(16, 24), 16);
    return (log * Math.floor(0x100000000 / size) + seg) * size;
  }

  async logicalSlotPositions(names: string[]): Promise<Record<string, number>> {
    return this.slotPositions('logical', names);
  }

  /** A physical slot's `restart_lsn`, a logical slot's `confirmed_flush_lsn`: where each of these slots that exists stands. */
  private async slotPositions(type: 'physical' | 'logical', names: string[]): Promise<Record<string, number>> {
    if (names.length === 0) return {};
    const column = type === 'physical' ? 'restart_lsn' : 'confirmed_flush_lsn';
    const rows = await this.query<{ slot_name: string; position: string }>(
      `SELECT slot_name, ${column}::text AS position FROM pg_catalog.pg_replication_slots
       WHERE slot_type = $2 AND ${column} IS NOT NULL AND slot_name = ANY($1::text[])`,
      [names, type],
    );
    return Object.fromEntries(rows.map((row) => [row.slot_name, parseLsn(row.position)]));
  }

  async createLogicalSlots(slots: PermanentSlot[]): Promise<string[]> {
    if (slots.length === 0) return [];
    const existing = new Set(
      (await this.query<{ slot_name: string }>('SELECT slot_name FROM pg_catalog.pg_replication_slots WHERE slot_name = ANY($1::text[])', [slots.map((slot) => slot.name)])).map((row) => row.slot_name),
    );
    const created: string[] = [];
    for (const slot of slots.filter((candidate) => !existing.has(candidate.name))) {
      // Creation waits for the transactions running now to end (its snapshot): a longer deadline than a query's.
      await this.inDatabase(slot.database!, 'SELECT pg_catalog.pg_create_logical_replication_slot($1, $2)', [slot.name, slot.plugin], LOGICAL_SLOT_CREATE_TIMEOUT_MS);
      created.push(slot.name);
    }
    return created;
  }

  async advanceLogicalSlots(slots: PermanentSlot[], positions: Record<string, number>): Promise<void> {
    const rows = await this.query<{ slot_name: string; confirmed_flush_lsn: string }>(
      `SELECT slot_name, confirmed_flush_lsn::text FROM pg_catalog.pg_replication_slots
       WHERE slot_type = 'logical' AND NOT active AND confirmed_flush_lsn IS NOT NULL AND slot_name = ANY($1::text[])`,
      [slots.map((slot) => slot.name)],
    );
    for (const row of rows) {
      const slot = slots.find((candidate) => candidate.name === row.slot_name)!;
      const target = positions[slot.name];
      if (target === undefined || parseLsn(row.confirmed_flush_lsn) >= target) continue;
      await this.inDatabase(slot.database!, 'SELECT pg_catalog.pg_replication_slot_advance($1, $2::pg_lsn)', [slot.name, formatLsn(target)]);
    }
  }

  /** One statement on a connection of its own to `database` (logical slots belong to one). */
  private async inDatabase(database: string, sql: string, params: unknown[], timeoutMs = 5000): Promise<void> {
    const client = new Client({ ...this.clientConfig, database, connectionTimeoutMillis: 2000, statement_timeout: timeoutMs, query_timeout: timeoutMs + 1000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query(sql, params);
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** Runs one statement and returns its rows. */
  async query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]> {
    return lastRows<T>(await this.main.run(sql, params));
  }

  /** Closes both connections; the next call opens new ones. */
  async close(): Promise<void> {
    await Promise.all([this.main.close(), this.sampling.close()]);
  }
}

/** The rows of a result, or of the last result of a multi-statement text. */
function lastRows<T>(result: QueryResult | QueryResult[]): T[] {
  const last = Array.isArray(result) ? result[result.length - 1] : result;
  return (last?.rows ?? []) as T[];
}

