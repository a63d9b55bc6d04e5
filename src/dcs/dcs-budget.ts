import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';

/**
 * The time one HA cycle may spend waiting for the DCS, shared by all the DCS calls of that cycle.
 * Without it every call would wait its own retry_timeout: with etcd frozen after a successful read,
 * a leader's refresh, member write and demotion writes would each cost a retry_timeout, and the
 * failsafe or demotion decision of the next cycle would come several retry_timeouts late.
 * Only the time spent waiting for the DCS counts, not PostgreSQL actions between the calls.
 */
export class DcsBudget {
  private spentMs = 0;

  /** `now` is a monotonic clock in milliseconds; tests pass one they move by hand. */
  constructor(
    readonly limitMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  remainingMs(): number {
    return Math.max(0, this.limitMs - this.spentMs);
  }

  /** Runs one DCS call and charges the time it took, answered or not. */
  async charge<T>(call: () => Promise<T>): Promise<T> {
    const startedAt = this.now();
    try {
      return await call();
    } finally {
      this.spentMs += this.now() - startedAt;
    }
  }
}

const cycleBudget = new AsyncLocalStorage<DcsBudget>();
let cyclesRunning = 0;

/**
 * Runs `work` (one HA cycle) with `budget` applying to every DCS call it starts before it ends, awaited or not (a
 * call takes the budget when it starts). Between cycles the storage is disabled: on Node 20 an enabled
 * AsyncLocalStorage runs async hooks on every asynchronous resource the process creates: about 2 µs of every
 * health check (CPU profile of a 3-node leader under wrk), for a budget that no call outside a cycle reads.
 */
export async function withinDcsBudget<T>(budget: DcsBudget, work: () => Promise<T>): Promise<T> {
  cyclesRunning++;
  try {
    return await cycleBudget.run(budget, work);
  } finally {
    if (--cyclesRunning === 0) cycleBudget.disable();
  }
}

/** Starts `work` free of the current cycle's budget: a background task outlives the cycle that started it. */
export function outsideDcsBudget<T>(work: () => T): T {
  return cycleBudget.exit(work);
}

/** The budget of the cycle this code runs in, if any. */
export function currentDcsBudget(): DcsBudget | undefined {
  return cycleBudget.getStore();
}
