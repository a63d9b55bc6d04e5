import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { DcsError } from '../dcs.port';
import { EtcdRequestError } from './etcd-client';
import { isTransient } from './etcd-types';
import { Backoff } from '../../common/backoff';

/** The time left of the current call's deadline, in ms (at least 1). */
export type RemainingMs = () => number;

/** Below this there is no point in sending another request before the deadline. */
export const MIN_ATTEMPT_MS = 20;

export interface RetryHooks {
  /** etcd answered that the lease is gone: the next attempt grants a new one. */
  leaseLost(): void;
  closed(): boolean;
}

/**
 * Runs `attempt` until it succeeds, a non-transient error occurs, or `timeoutMs` has passed: transient
 * failures (unreachable host, timeout, no etcd leader) are retried after 100 ms, doubling to at most 1 s.
 */
export async function retryTransient<T>(
  timeoutMs: number,
  operation: string,
  attempt: (remaining: RemainingMs) => Promise<T>,
  hooks: RetryHooks,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  const remaining = () => Math.max(1, Math.round(deadline - performance.now()));
  const backoff = new Backoff();
  for (;;) {
    try {
      return await attempt(remaining);
    } catch (error) {
      if (error instanceof EtcdRequestError && error.isLeaseNotFound) hooks.leaseLost();
      else if (!isTransient(error) || hooks.closed())
        throw new DcsError(`${operation}: ${(error as Error).message}`, { cause: error });
      const pause = Math.min(backoff.next(), deadline - performance.now() - MIN_ATTEMPT_MS);
      if (pause < 0)
        throw new DcsError(`${operation}: failed within ${timeoutMs} ms: ${(error as Error).message}`, {
          cause: error,
        });
      await sleep(pause);
    }
  }
}
