/** Node's timers hold at most 2^31 - 1 ms (about 24.8 days); a longer delay fires at once with a TimeoutOverflowWarning. */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/**
 * A delay Node's timers can honour. Callers that wait longer wake early and wait again, so the
 * clamp never makes anything happen early: it only adds a wake-up.
 */
export function timerDelay(ms: number): number {
  if (!Number.isFinite(ms)) return MAX_TIMER_DELAY_MS;
  return Math.min(Math.max(0, ms), MAX_TIMER_DELAY_MS);
}
