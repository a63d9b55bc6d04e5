import { DataDirInfo } from '../postgresql/postgres.port';
import { HistoryEntry } from '../dcs/dcs.port';
import type { EndedTask } from './cluster-snapshot';

/**
 * Why PostgreSQL failed to start, read from the end of its log (carried in the postgres machine's
 * lastError), and what to do about it. Pure functions: decide() calls them.
 *
 * - `diverged`: this data directory holds WAL past the point where the leader's timeline forked
 *   (`requested timeline N is not a child of this server's history`): only pg_rewind (or a reclone)
 *   makes it a replica again; starting it again cannot.
 * - `wal_missing`: the checkpoint or WAL it needs is gone: the same way out.
 * - `in_use`: an old postmaster's lock file or shared memory is still held: wait for it to go.
 * - `disk_full`: a write failed for want of space (most often pg_wal's filesystem): a start, a crash
 *   recovery and a rewind all need to write, so each fails until space is freed; retried slowly, and
 *   never a reason to remove the data directory (see mayRemoveDataAfterFailedRewind).
 * - `still_starting`: the start ran out of its deadline while the postmaster went on running (a long
 *   crash recovery, or a host too loaded to answer its probes): it is still starting, as the reference
 *   says; nothing may rewind, clone or remove beside it, and a lock holder stops it before it lets go.
 * - `port_in_use`, `bad_setting`: an operator must act; retrying slowly keeps the node visible.
 * - `unknown`: anything else, retried slowly.
 */
export type StartFailureKind =
  'still_starting' | 'diverged' | 'wal_missing' | 'disk_full' | 'in_use' | 'port_in_use' | 'bad_setting' | 'unknown';

const PATTERNS: [StartFailureKind, RegExp][] = [
  // First: the log tail that follows may hold any of the others, from an earlier attempt.
  ['still_starting', /^postgres \(pid \d+\) did not accept connections within \d+ ms; it keeps running/],
  // First: a full disk also makes recovery stop short, which could read as the WAL it needs missing.
  ['disk_full', /No space left on device|Disk quota exceeded|could not extend file/],
  [
    'diverged',
    /is not a child of this server's history|does not contain minimum recovery point|forked off current database system timeline/,
  ],
  [
    'wal_missing',
    /could not locate (a valid|required) checkpoint record|requested WAL segment \S+ has already been removed|could not find redo location/,
  ],
  ['port_in_use', /could not bind|Address already in use|could not create any TCP\/IP sockets/],
  ['in_use', /lock file "[^"]*" already exists|pre-existing shared memory block|Is another postmaster \(PID/],
  [
    'bad_setting',
    /invalid value for parameter|unrecognized configuration parameter|configuration file "[^"]*" contains errors|must be at least|cannot be (less|greater) than/,
  ],
];

export function classifyStartFailure(lastError: string | null): StartFailureKind {
  if (!lastError) return 'unknown';
  return PATTERNS.find(([, pattern]) => pattern.test(lastError))?.[0] ?? 'unknown';
}

/** The line of the failure that says most (PostgreSQL's FATAL or PANIC), for verdicts repeated every cycle. */
export function startFailureSummary(lastError: string | null): string {
  if (!lastError) return 'no reason recorded';
  const lines = lastError.split(/\n| \| /).filter((line) => line.trim());
  const fatal =
    lines.find((line) => /No space left on device/.test(line)) ?? lines.find((line) => /\b(FATAL|PANIC):/.test(line));
  return (fatal ?? lines[lines.length - 1]).replace(/^.*?\b(FATAL|PANIC):\s*/, '').trim();
}

/** Whether a rewind or a reclone, rather than another start, is the way out. */
export function needsRejoin(kind: StartFailureKind): boolean {
  return kind === 'diverged' || kind === 'wal_missing';
}

/**
 * Whether a failed pg_rewind (its crash recovery included) may lead to the data directory's removal
 * and a reclone, when `remove_data_directory_on_*` allow it: not when it failed for want of space.
 * Freeing space lets the same rewind succeed; a reclone would throw away the only copy of WAL no
 * replica may hold, and would fill the same disk again.
 */
export function mayRemoveDataAfterFailedRewind(rewindError: string | null): boolean {
  return classifyStartFailure(rewindError) !== 'disk_full';
}

/** The most a failing start waits before its next try: long enough to stay quiet, short enough to heal soon after a fix. */
export const START_RETRY_CAP_MS = 60_000;

/**
 * Capped exponential backoff between start attempts of a node whose PostgreSQL keeps failing:
 * loop_wait after the first failure, doubling after each further one, at most START_RETRY_CAP_MS.
 */
export function startRetryDelayMs(failedStarts: number, loopWaitSeconds: number): number {
  if (failedStarts <= 0) return 0;
  const base = Math.max(1, loopWaitSeconds) * 1000;
  return Math.min(START_RETRY_CAP_MS, base * 2 ** Math.min(failedStarts - 1, 16));
}

/**
 * When task `name` may run again after failing (the same backoff as failed starts), or null when
 * it may run now: it did not fail last, or its pause is over.
 */
export function failedTaskRetryAt(
  last: EndedTask | null,
  name: string,
  now: number,
  loopWaitSeconds: number,
): number | null {
  if (!last || last.name !== name || !last.error || last.endedAt === null) return null;
  const at = last.endedAt + startRetryDelayMs(last.failuresInRow, loopWaitSeconds);
  return now < at ? at : null;
}

/**
 * Whether this stopped data directory holds WAL of an abandoned timeline: its last checkpoint lies
 * on a timeline that, in the leader's history, ended before that checkpoint. Starting it as a
 * replica would fail (`requested timeline is not a child of this server's history`) or replay
 * nothing: it must be rewound first. Unknown history or positions answer false (the start itself
 * then tells).
 */
export function divergedFromHistory(dataDir: DataDirInfo, history: HistoryEntry[] | null | undefined): boolean {
  if (!history || dataDir.timeline === undefined || dataDir.checkpointLsn === undefined) return false;
  const ended = history.find((entry) => Number(entry[0]) === dataDir.timeline);
  if (!ended) return false;
  const switchLsn = Number(ended[1]);
  return Number.isFinite(switchLsn) && dataDir.checkpointLsn >= switchLsn;
}
