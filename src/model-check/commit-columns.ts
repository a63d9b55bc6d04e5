import { Violation } from './model-types';
import { ClusterModel, holdsCommit, NODE_NAMES, NodeModel } from './model';

/**
 * synchronous_commit's columns (ModelSettings.synchronousCommit): with the setting given, a standby takes WAL in
 * three steps, as its walreceiver and startup process do: written (write_lsn), flushed (flush_lsn, the node's `wal`:
 * what it durably holds) and replayed (replay_lsn). Without it a standby's three positions are one, as before.
 */
export type SynchronousCommit = 'on' | 'remote_write' | 'remote_apply';

/** pg_stat_replication's write_lsn of a standby: past its flush position by the WAL written and not yet flushed. */
export const writeLsn = (n: NodeModel): number => n.wal + n.writeAhead;
/** replay_lsn: behind its flush position by the WAL flushed and not yet replayed. */
export const replayLsn = (n: NodeModel): number => n.wal - n.replayBehind;

/** The position a commit waits for under the setting (PostgreSQL's SyncRepWaitMode). */
export function committedColumn(c: ClusterModel, n: NodeModel): number {
  const setting = c.settings?.synchronousCommit ?? 'on';
  return setting === 'remote_write' ? writeLsn(n) : setting === 'remote_apply' ? replayLsn(n) : n.wal;
}

/**
 * One `ship` of a standby with the columns apart: the next of write, flush and replay that is behind; a new
 * timeline is taken at once (the three together). Returns false when the standby is not staged (the setting is off).
 */
export function shipStaged(c: ClusterModel, n: NodeModel, up: NodeModel): boolean {
  if (!c.settings?.synchronousCommit) return false;
  if (up.timeline !== n.timeline) {
    n.wal = up.wal;
    n.timeline = up.timeline;
    n.writeAhead = 0;
    n.replayBehind = 0;
  } else if (n.writeAhead === 0 && up.wal > n.wal) n.writeAhead = up.wal - n.wal;
  else if (n.writeAhead > 0) {
    n.wal += n.writeAhead;
    n.replayBehind += n.writeAhead;
    n.writeAhead = 0;
  } else n.replayBehind = 0;
  return true;
}

/** A standby's WAL not yet flushed or replayed (the setting on): more steps of `ship` to take. */
export const columnsApart = (n: NodeModel): boolean => n.writeAhead > 0 || n.replayBehind > 0;

/** A node that stops streaming (promoted, restarted, crashed) keeps what it flushed: the columns are one again. */
export function columnsTogether(n: NodeModel): void {
  n.writeAhead = 0;
  n.replayBehind = 0;
}

/**
 * 3c. synchronous_commit `remote_apply` (or `remote_write`): a standby `/sync` names as synchronous (`on`, `strict`)
 * has, in the column commits wait for, every commit acknowledged under a synchronous mode: with `remote_apply` a read
 * on it sees every acknowledged commit, which is what the setting buys and what a client routing reads to the
 * synchronous standbys (`GET /synchronous`) relies on. With `on` this is invariant 3 (the flush position).
 */
export function checkCommitColumn(c: ClusterModel): Violation | null {
  const setting = c.settings?.synchronousCommit;
  if (!setting || setting === 'on' || (c.mode !== 'on' && c.mode !== 'strict') || !c.sync || !c.acked?.sync)
    return null;
  for (const j of c.sync.standbys) {
    const n = c.nodes[j];
    const at = committedColumn(c, n);
    if (!holdsCommit(c, { ...n, wal: at }, c.acked))
      return {
        invariant: 'sync',
        message: `/sync names ${NODE_NAMES[j]} synchronous but its ${setting === 'remote_apply' ? 'replay' : 'write'} position ${n.timeline}/${at} lacks the commit at ${c.acked.timeline}/${c.acked.wal} acknowledged under synchronous_commit ${setting}`,
      };
  }
  return null;
}
