import { TimerClock } from '../common/clock';

/** Jumps smaller than this are the ordinary drift between two readings of two clocks, not worth a log line. */
const NOTEWORTHY_JUMP_MS = 1000;

/**
 * Notices, once per HA cycle, how far the wall clock moved beyond (or short of) the time that passed
 * on the monotonic clock since the previous cycle: an operator's `date -s`, NTP stepping the clock.
 * Durations never depend on it (they run on the monotonic clock); scheduled actions do, since they
 * are set in wall-clock time (see scheduledActionDue).
 */
export class WallClockJumps {
  private lastSkew: number | null = null;

  constructor(private readonly clock: TimerClock) {}

  /** The jump since the previous call in ms (positive: forward), and a sentence when it is worth one. */
  observe(): { jumpMs: number; note: string | null } {
    const skew = this.clock.now() - this.clock.monotonic();
    const jumpMs = this.lastSkew === null ? 0 : skew - this.lastSkew;
    this.lastSkew = skew;
    if (Math.abs(jumpMs) < NOTEWORTHY_JUMP_MS) return { jumpMs, note: null };
    const seconds = Math.round(Math.abs(jumpMs) / 1000);
    return {
      jumpMs,
      note: `the wall clock jumped ${jumpMs > 0 ? 'forward' : 'back'} by ${seconds} s since the last cycle: leases and waits are unaffected (they run on the monotonic clock), scheduled actions follow the wall clock`,
    };
  }
}
