import { formatLsn } from '../../common/lsn';

/** One line of a `<TL>.history` file: `timeline` ended at `lsn`, where its child began. */
export interface TimelineSwitch {
  readonly timeline: number;
  readonly lsn: number;
  readonly reason: string;
}

/** Where a server's WAL stands on its branch of timelines: what pg_rewind and a WAL receiver compare. */
export interface WalLineage {
  /** The timeline WAL is written or replayed on now. */
  timeline: number;
  /** Every ended ancestor of `timeline`, oldest first (the lines of `<timeline>.history`). */
  history: readonly TimelineSwitch[];
  /** The end of the WAL this server has (flushed on a primary, received or replayed on a replica). */
  walEnd: number;
}

/** The reason PostgreSQL writes for a promotion without a recovery target. */
export const PROMOTION_REASON = 'no recovery target specified';

/** `pg_wal/0000000A.history` for timeline 10. */
export function historyFileName(timeline: number): string {
  return `pg_wal/${timeline.toString(16).toUpperCase().padStart(8, '0')}.history`;
}

/** The file as PostgreSQL writes it: `<parent TL>\t<switch LSN>\t<reason>` per ended ancestor. */
export function renderHistory(history: readonly TimelineSwitch[]): string {
  return history.map((entry) => `${entry.timeline}\t${formatLsn(entry.lsn)}\t${entry.reason}\n`).join('');
}

/** The history file of `timeline` as a server on `lineage` holds it, or null when it has none (timeline 1, or one it never saw). */
export function historyFileOf(lineage: WalLineage, timeline: number): readonly TimelineSwitch[] | null {
  if (timeline <= 1 || timeline > lineage.timeline) return null;
  if (timeline === lineage.timeline) return lineage.history;
  const ended = lineage.history.findIndex((entry) => entry.timeline === timeline);
  return ended < 0 ? null : lineage.history.slice(0, ended);
}

function sameSwitch(a: TimelineSwitch, b: TimelineSwitch): boolean {
  return a.timeline === b.timeline && a.lsn === b.lsn;
}

/**
 * Where two branches part, as pg_rewind finds it: the end of the last timeline both histories share.
 * Null when both are still on the same timeline (nothing diverged).
 */
export function divergencePoint(a: WalLineage, b: WalLineage): number | null {
  let shared = 0;
  while (shared < a.history.length && shared < b.history.length && sameSwitch(a.history[shared], b.history[shared]))
    shared++;
  const aEnd = shared < a.history.length ? a.history[shared].lsn : null;
  const bEnd = shared < b.history.length ? b.history[shared].lsn : null;
  if (aEnd === null && bEnd === null) return a.timeline === b.timeline ? null : Math.min(a.walEnd, b.walEnd);
  return Math.min(aEnd ?? Infinity, bEnd ?? Infinity);
}

/**
 * Whether a WAL receiver on `local` can stream from `upstream`: the upstream's history holds the
 * local timeline, and the local WAL does not go past the point where the upstream left that
 * timeline (nor past the upstream's own end). Otherwise PostgreSQL answers "requested starting
 * point ... is not in this server's history" (or "... ahead of the WAL flush position").
 */
export function canStream(local: WalLineage, upstream: WalLineage): boolean {
  if (local.timeline > upstream.timeline || local.walEnd > upstream.walEnd) return false;
  if (local.history.length > upstream.history.length) return false;
  if (!local.history.every((entry, index) => sameSwitch(entry, upstream.history[index]))) return false;
  if (local.timeline === upstream.timeline) return local.history.length === upstream.history.length;
  const ended = upstream.history[local.history.length];
  return ended.timeline === local.timeline && local.walEnd <= ended.lsn;
}

/**
 * The point where `upstream`'s history left `timeline` when a checkpoint at `checkpointLsn` on it
 * lies at or past that point, as the startup process checks before it follows the newest timeline
 * (`requested timeline N is not a child of this server's history`); null when the checkpoint is on it.
 */
export function forkBeforeCheckpoint(timeline: number, checkpointLsn: number, upstream: WalLineage): number | null {
  const ended = upstream.history.find((entry) => entry.timeline === timeline);
  return ended && checkpointLsn >= ended.lsn ? ended.lsn : null;
}
