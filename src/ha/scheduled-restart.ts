import type { NodeView, ScheduledRestart } from './node-view';

/**
 * Whether a scheduled action (a switchover, a restart) set for wall-clock time `at` is due at `now`
 * (reference 3.7): ahead it waits; more than ⌊1.5·loop_wait⌋ late it is stale; in between it runs.
 * `wallJumpMs` is how far the wall clock jumped since the previous cycle: lateness that a forward
 * jump made in one step is not counted, so an action the jump made due runs instead of being thrown
 * away as stale (the reference, comparing the wall clock alone, discards it). A backward jump only
 * puts the action further ahead: it runs when the wall clock reaches its time again.
 */
export function scheduledActionDue(
  at: number,
  now: number,
  loopWaitSeconds: number,
  wallJumpMs = 0,
): 'wait' | 'run' | 'stale' {
  const lateMs = now - at;
  if (lateMs < 0) return 'wait';
  if (lateMs - Math.max(0, wallJumpMs) > Math.floor(1.5 * loopWaitSeconds) * 1000) return 'stale';
  return 'run';
}

export function restartDue(
  restart: Pick<ScheduledRestart, 'at'>,
  now: number,
  loopWaitSeconds: number,
  wallJumpMs = 0,
): 'wait' | 'run' | 'stale' {
  return scheduledActionDue(restart.at, now, loopWaitSeconds, wallJumpMs);
}

/** Why the restart's filters do not hold now, or null when they do (reference 1.8 step 3a). */
export function restartFilterMismatch(
  filters: Pick<ScheduledRestart, 'role' | 'postgres_version' | 'restart_pending'>,
  view: Pick<NodeView, 'role' | 'sample'>,
): string | null {
  if (filters.role && filters.role !== view.role) return `role ${view.role} is not ${filters.role}`;
  if (filters.postgres_version && view.sample && view.sample.serverVersion >= versionNumber(filters.postgres_version)) {
    return `PostgreSQL ${view.sample.serverVersion} is not older than ${filters.postgres_version}`;
  }
  if (filters.restart_pending && (!view.sample || Object.keys(view.sample.pendingRestart).length === 0))
    return 'no restart is pending';
  return null;
}

/** `scheduled_restart` as the member key and the status document show it. */
export function publishedRestart(restart: ScheduledRestart): Record<string, unknown> {
  const published: Record<string, unknown> = { schedule: restart.schedule };
  if (restart.role) published.role = restart.role;
  if (restart.postgres_version) published.postgres_version = restart.postgres_version;
  if (restart.restart_pending) published.restart_pending = true;
  if (restart.timeout) published.timeout = restart.timeout;
  return published;
}

/** `15.4` → 150004, as PostgreSQL's server_version_num. */
export function versionNumber(version: string): number {
  const [major, minor] = version.split('.').map(Number);
  return major * 10000 + (minor ?? 0);
}
