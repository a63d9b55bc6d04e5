import { Client, ClientConfig, QueryResult } from 'pg';
import { SerialConnection } from './serial-connection';
import { PostgresqlConfig } from '../config/config.types';
import { LocalConnection, localConnection, toClientConfig } from './local-connection';
import { formatLsn, parseLsn } from '../common/lsn';
import { isIgnoredSlot, PermanentSlot, SlotMatcher } from '../config/slots-config';
import { PhysicalSlotState, PostgresQuery, PostgresSample, SlotChanges } from './postgres.port';
import { physicalSlotsInOrder } from './physical-slots';
import { SAMPLE_SQL, sampleOf, SampleRow } from './pg-sample';

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
 * SQL against the local server as the superuser over TCP, on two connections: the sampler's, so
 * that a reading is never queued behind a CHECKPOINT or a slot change and a server that stops
 * answering shows as one, and one for everything else.
 */
export class PgQuery implements PostgresQuery {
  private readonly main: SerialConnection;
  private readonly sampling: SerialConnection;

  private readonly clientConfig: ClientConfig;

  constructor(connection: LocalConnection, options: PgQueryOptions = {}) {
    const settings = {
      statementTimeoutMs: options.statementTimeoutMs ?? 2000,
      connectTimeoutMs: options.connectTimeoutMs ?? 2000,
    };
    this.clientConfig = toClientConfig(connection);
    this.main = new SerialConnection(this.clientConfig, settings);
    // As Patroni 4.1.4: the monitoring query, run every second, stays out of pg_stat_statements (its GC is costly).
    this.sampling = new SerialConnection(
      { ...this.clientConfig, options: '-c pg_stat_statements.track=none' },
      settings,
    );
  }

  static fromConfig(config: PostgresqlConfig, options?: PgQueryOptions): PgQuery {
    return new PgQuery(localConnection(config), options);
  }

  /**
   * One reading of the server in one round trip, as a prepared statement: planning the statement (pg_settings,
   * pg_stat_replication, pg_replication_slots and the WAL receiver's views) was 7 of its 8 ms.
   */
  async sample(): Promise<PostgresSample> {
    return sampleOf(lastRows<SampleRow>(await this.sampling.run(SAMPLE_SQL, undefined, undefined, 'stator_sample'))[0]);
  }

  /** CHECKPOINT, with its own (longer) timeout: a checkpoint writes every dirty buffer. */
  async checkpoint(timeoutMs = 60_000): Promise<void> {
    const timeout = Math.max(1, Math.round(timeoutMs));
    await this.main.run(
      `SET statement_timeout = ${timeout}; CHECKPOINT; RESET statement_timeout`,
      undefined,
      timeout + 1000,
    );
  }

  /**
   * Creates the missing physical slots (reserving WAL at once) and drops the other physical slots.
   * A slot that is in use (its standby still streams) is left for a later call rather than
   * terminating the walsender.
   */
  async syncPhysicalSlots(
    names: string[],
    keep: SlotMatcher[] = [],
    known?: PhysicalSlotState[],
  ): Promise<SlotChanges> {
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
    const drop = unwanted
      .map((slot) => slot.slot_name)
      .filter((name) => !isIgnoredSlot(keep, { name, type: 'physical' }));
    const lost = rows
      .filter((row) => row.change === 'lost' && drop.includes(row.slot_name))
      .map((row) => row.slot_name);
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
        : await this.query<{ slot_name: string }>(
            'SELECT (pg_catalog.pg_create_physical_replication_slot(n, true)).slot_name FROM pg_catalog.unnest($1::text[]) AS n',
            [recreate],
          );
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
      (
        await this.query<{ slot_name: string }>(
          'SELECT slot_name FROM pg_catalog.pg_replication_slots WHERE slot_name = ANY($1::text[])',
          [slots.map((slot) => slot.name)],
        )
      ).map((row) => row.slot_name),
    );
    const created: string[] = [];
    for (const slot of slots.filter((candidate) => !existing.has(candidate.name))) {
      // Creation waits for the transactions running now to end (its snapshot): a longer deadline than a query's.
      await this.inDatabase(
        slot.database!,
        'SELECT pg_catalog.pg_create_logical_replication_slot($1, $2)',
        [slot.name, slot.plugin],
        LOGICAL_SLOT_CREATE_TIMEOUT_MS,
      );
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
      await this.inDatabase(slot.database!, 'SELECT pg_catalog.pg_replication_slot_advance($1, $2::pg_lsn)', [
        slot.name,
        formatLsn(target),
      ]);
    }
  }

  /** One statement on a connection of its own to `database` (logical slots belong to one). */
  private async inDatabase(database: string, sql: string, params: unknown[], timeoutMs = 5000): Promise<void> {
    const client = new Client({
      ...this.clientConfig,
      database,
      connectionTimeoutMillis: 2000,
      statement_timeout: timeoutMs,
      query_timeout: timeoutMs + 1000,
    });
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
