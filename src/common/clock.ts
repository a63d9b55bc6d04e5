import { timerDelay } from './timers';

/** Time source. Decisions take time from here so tests can control it. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

/**
 * A clock that also calls back later. The HA logic's waits (the loop, the sampler, scheduled
 * operations, the load balancer's drain) go through it, so tests run them without waiting.
 */
export interface TimerClock extends Clock {
  /** Calls `callback` once, `ms` from now; the returned function cancels it. */
  setTimer(callback: () => void, ms: number): () => void;
}

export const systemClock: TimerClock = {
  now: () => Date.now(),
  setTimer: (callback, ms) => {
    const timer = setTimeout(callback, timerDelay(ms));
    return () => clearTimeout(timer);
  },
};

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

/** A clock tests move by hand; timers fire in order as it passes them. */
export class ManualClock implements TimerClock {
  private timers: { at: number; seq: number; callback: () => void }[] = [];
  private seq = 0;

  constructor(private current = Date.parse('2026-01-01T00:00:00Z')) {}

  now(): number {
    return this.current;
  }

  setTimer(callback: () => void, ms: number): () => void {
    const timer = { at: this.current + Math.max(0, ms), seq: this.seq++, callback };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Moves time forward by `ms`, firing each timer due on the way at its own time. */
  advance(ms: number): void {
    const until = this.current + ms;
    for (let next = this.nextDue(until); next; next = this.nextDue(until)) {
      this.timers = this.timers.filter((t) => t !== next);
      this.current = Math.max(this.current, next.at);
      next.callback();
    }
    this.current = until;
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
