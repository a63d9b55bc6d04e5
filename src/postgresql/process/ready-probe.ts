/** The first readiness probe's deadline, and the most a probe is given (see nextReadyProbeMs). */
export const READY_PROBE_FIRST_MS = 1000;
const READY_PROBE_MAX_MS = 8000;

/**
 * The next readiness probe's deadline: doubled after a probe that ran into its own (up to READY_PROBE_MAX_MS), kept
 * after one that was answered. On a crowded host (a fleet of 60 servers on 2 cores) a new backend took longer than 1 s
 * to answer: every 1 s probe was cut short while the server had long been ready, the start ran out of its timeout,
 * and the server it had started went on running unseen.
 */
export function nextReadyProbeMs(currentMs: number, tookMs: number): number {
  return tookMs >= currentMs - 50 ? Math.min(READY_PROBE_MAX_MS, currentMs * 2) : currentMs;
}
