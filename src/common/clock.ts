import { timerDelay } from './timers';

/** Time source. Decisions take time from here so tests can control it. */
export interface Clock {
  /** Milliseconds since the epoch: the wall clock, which an operator or NTP may move either way. */
  now(): number;
}

/**
 * A clock that also calls back later. The HA logic's waits (the loop, the sampler, scheduled
 * operations, the load balancer's drain) go through it, so tests run them without waiting.
 */
export interface TimerClock extends Clock {
  /**
   * Milliseconds from an arbitrary origin that only ever move forward at the pace of real time:
   * every duration (a lease's age, a deadline, a backoff, a silence) is measured on it, so a jump
   * of the wall clock neither ends a lease early nor stretches a wait. Timers run on it too.
   */
  monotonic(): number;
  /** Calls `callback` once, `ms` from now; the returned function cancels it. */
  setTimer(callback: () => void, ms: number): () => void;
}

export const systemClock: TimerClock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimer: (callback, ms) => {
    const timer = setTimeout(callback, timerDelay(ms));
    return () => clearTimeout(timer);
  },
};

/**
 * A monotonic instant as the wall-clock time it corresponds to, read now: what decisions that compare
 * with the wall clock (scheduled actions) and the API's epoch fields see. 0 stays 0 ("never").
 */
export function wallTimeOf(clock: TimerClock, monotonicAt: number): number {
  return monotonicAt === 0 ? 0 : clock.now() - (clock.monotonic() - monotonicAt);
}

/** Resolves `ms` from now on `clock`. */
export function sleep(clock: TimerClock, ms: number): Promise<void> {
  return new Promise((resolve) => clock.setTimer(resolve, ms));
}

/** Calls `callback` every `ms` on `clock` until the returned function is called. */
export function every(clock: TimerClock, ms: number, callback: () => void): () => void {
  let cancel = () => {};
  const tick = () => {
    cancel = clock.setTimer(tick, ms);
    callback();
  };
  cancel = clock.setTimer(tick, ms);
  return () => cancel();
}

/**
 * A clock tests move by hand; timers fire in order as it passes them. Its monotonic reading starts
 * equal to its wall reading and stays so until `jumpWall` moves the wall clock alone.
 */
export class ManualClock implements TimerClock {
  private timers: { at: number; seq: number; callback: () => void }[] = [];
  private seq = 0;
  private elapsed: number;

  constructor(private current = Date.parse('2026-01-01T00:00:00Z')) {
    this.elapsed = current;
  }

  now(): number {
    return this.current;
  }

  monotonic(): number {
    return this.elapsed;
  }

  setTimer(callback: () => void, ms: number): () => void {
    const timer = { at: this.elapsed + Math.max(0, ms), seq: this.seq++, callback };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Moves time forward by `ms`, firing each timer due on the way at its own time. */
  advance(ms: number): void {
    const until = this.elapsed + ms;
    for (let next = this.nextDue(until); next; next = this.nextDue(until)) {
      this.timers = this.timers.filter((t) => t !== next);
      this.current += Math.max(0, next.at - this.elapsed);
      this.elapsed = Math.max(this.elapsed, next.at);
      next.callback();
    }
    this.current += until - this.elapsed;
    this.elapsed = until;
  }

  /** Sets the wall clock forward (positive) or back (negative) by `ms`, as an operator or NTP may: no time passes, no timer fires. */
  jumpWall(ms: number): void {
    this.current += ms;
  }

  /** Timers not fired yet. */
  pendingTimers(): number {
    return this.timers.length;
  }

  private nextDue(until: number) {
    const due = this.timers.filter((t) => t.at <= until);
    return due.sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
  }
}
