import { isIgnoredSlot, SlotMatcher } from '../../config/slots-config';
import { PostgresQuery, PostgresSample, SlotChanges } from '../postgres.port';
import { MemoryPostgresServer } from './memory-postgres';
import { FailableOperation, MemoryCluster, MemoryPostmaster } from './memory-state';
import { historyFileOf, renderHistory } from './wal-history';

type Rows = Record<string, unknown>[];

/** PostgreSQL's rule for slot names (`ReplicationSlotValidateName`). */
const SLOT_NAME = /^[a-z0-9_]{1,63}$/;

/**
 * The PostgresQuery port over a MemoryPostgresServer, answering from its state as PgQuery's SQL
 * would: a server that is down refuses the connection (ECONNREFUSED), a frozen one answers with a
 * client-side timeout (or, frozen with 'hang', not before it is thawed or killed), and failures
 * injected with `server.failNext('sample' | 'checkpoint' | 'syncPhysicalSlots' | 'query', message)`
 * reject once. `query` knows `pg_read_file` of `pg_wal/<TL>.history` and `SELECT 1`; tests add
 * answers for other statements with `answer`.
 */
export class MemoryPostgresQuery implements PostgresQuery {
  private readonly answers: Array<{ pattern: RegExp; rows: (params: unknown[]) => Rows }> = [];

  constructor(readonly server: MemoryPostgresServer) {}

  /** Statements matching `pattern` answer `rows` (or what the function returns for the parameters). */
  answer(pattern: RegExp, rows: Rows | ((params: unknown[]) => Rows)): void {
    this.answers.unshift({ pattern, rows: typeof rows === 'function' ? rows : () => rows });
  }

  async sample(): Promise<PostgresSample> {
    const { postmaster, cluster } = await this.connected('sample');
    const inRecovery = postmaster.inRecovery;
    const receivedLsn = inRecovery && postmaster.received ? cluster.walEnd : null;
    const replayedLsn = inRecovery ? cluster.replayLsn : null;
    return {
      inRecovery,
      serverVersion: this.server.serverVersion,
      postmasterStartTime: pythonTimestamp(postmaster.startedAt),
      // A replica that does not stream reports its restartpoint's timeline, as pg_control_checkpoint() does.
      timeline: inRecovery && !postmaster.streaming ? cluster.checkpoint.timeline : cluster.timeline,
      walPosition: inRecovery ? Math.max(receivedLsn ?? 0, replayedLsn ?? 0) : cluster.walEnd,
      receivedLsn,
      replayedLsn,
      replayedTimestamp:
        inRecovery && cluster.replayedCommitAt !== null ? pythonTimestamp(cluster.replayedCommitAt) : null,
      replayPaused: inRecovery && postmaster.replayPaused,
      replicationState: postmaster.streaming ? 'streaming' : null,
      latestEndLsn: inRecovery ? postmaster.latestEndLsn : null,
      replication: this.server.replicationConnections(),
      synchronousStandbyNames: postmaster.parameters.synchronous_standby_names ?? '',
      synchronousCommit: postmaster.parameters.synchronous_commit ?? 'on',
      systemIdentifier: cluster.systemIdentifier,
      pendingRestart: structuredClone(postmaster.pendingRestart),
    };
  }

  /** CHECKPOINT: a checkpoint record on a primary (pg_control moves to the current timeline), a restartpoint on a replica. */
  async checkpoint(): Promise<void> {
    await this.connected('checkpoint');
    this.server.checkpointNow();
  }

  /** Creates the missing physical slots and drops the others, except those a standby streams from now and those `keep` covers. */
  async syncPhysicalSlots(names: string[], keep: SlotMatcher[] = []): Promise<SlotChanges> {
    const { cluster } = await this.connected('syncPhysicalSlots');
    const invalid = names.find((name) => !SLOT_NAME.test(name));
    if (invalid !== undefined) throw new Error(`replication slot name "${invalid}" contains invalid character`);
    const inUse = new Set(
      this.server.network.downstreamsOf(this.server).map((replica) => replica.postmaster?.slotName),
    );
    const changes: SlotChanges = { created: names.filter((name) => !cluster.slots.has(name)), dropped: [] };
    for (const name of names) cluster.slots.add(name);
    for (const slot of [...cluster.slots]) {
      if (!names.includes(slot) && !inUse.has(slot) && !isIgnoredSlot(keep, { name: slot, type: 'physical' })) {
        cluster.slots.delete(slot);
        changes.dropped.push(slot);
      }
    }
    this.server.network.settle(); // a standby waiting for its slot streams now
    return changes;
  }

  /** The in-memory server keeps no slot positions: every slot holds the current WAL position. */
  async physicalSlotPositions(names: string[]): Promise<Record<string, number>> {
    const { cluster } = await this.connected('query');
    return Object.fromEntries(
      names.filter((name) => cluster.slots.has(name)).map((name) => [name, this.server.walPosition ?? 0]),
    );
  }

  async advanceSlots(): Promise<void> {
    await this.connected('query');
  }

  /** The in-memory server's slots hold no xmin and no logical slot exists: only idle physical slots are dropped. */
  async dropIdleSlots(names: string[], type: 'physical' | 'logical', holdingXmin = false): Promise<string[]> {
    const { cluster } = await this.connected('query');
    if (type === 'logical' || holdingXmin) return [];
    const inUse = new Set(
      this.server.network.downstreamsOf(this.server).map((replica) => replica.postmaster?.slotName),
    );
    const dropped = names.filter((name) => cluster.slots.has(name) && !inUse.has(name));
    for (const name of dropped) cluster.slots.delete(name);
    return dropped;
  }

  async oldestWalPosition(): Promise<number> {
    await this.connected('query');
    return 0;
  }

  /** Logical decoding is not simulated: the in-memory server holds no logical slot. */
  async logicalSlotPositions(): Promise<Record<string, number>> {
    await this.connected('query');
    return {};
  }

  async createLogicalSlots(slots: { name: string }[]): Promise<string[]> {
    await this.connected('query');
    if (slots.length > 0) throw new Error('logical slots are not simulated by the in-memory PostgreSQL');
    return [];
  }

  async advanceLogicalSlots(): Promise<void> {
    await this.connected('query');
  }

  async query<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
    const { postmaster, cluster } = await this.connected('query');
    const custom = this.answers.find((answer) => answer.pattern.test(sql));
    if (custom) return custom.rows(params) as T[];
    const readFile = /pg_read_file\s*\(\s*(?:\$1|'([^']*)')\s*\)(?:\s+AS\s+(\w+))?/i.exec(sql);
    if (readFile)
      return [{ [readFile[2] ?? 'pg_read_file']: readHistoryFile(cluster, readFile[1] ?? String(params[0])) }] as T[];
    if (/^\s*SELECT\s+1\s*;?\s*$/i.test(sql)) return [{ '?column?': 1 }] as T[];
    // The synchronous standbys' nudge: a transaction id, some WAL.
    if (/pg_current_xact_id\(\)/.test(sql) && !postmaster.inRecovery) {
      this.server.write(64);
      return [];
    }
    throw new Error(`the in-memory PostgreSQL does not run this statement (add it with answer()): ${sql}`);
  }

  async close(): Promise<void> {}

  /** A connection that answers, as the real adapter would get one, or the error it would get instead. */
  private async connected(
    operation: FailableOperation,
  ): Promise<{ postmaster: MemoryPostmaster; cluster: MemoryCluster }> {
    this.server.tick();
    if (this.server.postmaster?.frozen === 'timeout') throw new Error('Query read timeout');
    await this.server.whenResponsive();
    const { postmaster, cluster } = this.server;
    if (!postmaster || !cluster) {
      throw Object.assign(new Error(`connect ECONNREFUSED 127.0.0.1:${this.server.port}`), { code: 'ECONNREFUSED' });
    }
    this.server.takeFailure(operation, (message) => new Error(message));
    this.server.network.settle();
    return { postmaster, cluster };
  }
}

/** `pg_wal/<TL>.history` as the server holds it, or PostgreSQL's error (SQLSTATE 58P01) for a file it has not. */
function readHistoryFile(cluster: MemoryCluster, file: string): string {
  const match = /^pg_wal\/([0-9A-F]{8})\.history$/.exec(file);
  const history = match ? historyFileOf(cluster, parseInt(match[1], 16)) : null;
  if (!history)
    throw Object.assign(new Error(`could not open file "${file}" for reading: No such file or directory`), {
      code: '58P01',
    });
  return renderHistory(history);
}

/** Python's `str(datetime)` in UTC, as PgQuery formats timestamps: microseconds only when not zero. */
function pythonTimestamp(epochMs: number): string {
  const iso = new Date(epochMs).toISOString();
  const micros = (epochMs % 1000) * 1000;
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${micros ? `.${String(micros).padStart(6, '0')}` : ''}+00:00`;
}
