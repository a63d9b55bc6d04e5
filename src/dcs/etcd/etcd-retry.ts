import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { DcsBudget } from '../dcs-budget';
import { DcsError } from '../dcs.port';
import { EtcdRequestError } from './etcd-client';
import { EtcdNoAnswerError, isTransient } from './etcd-types';
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
  // The last failure that says why (a refusal, an unreachable host): the last try, given what was left of the
  // deadline, often ends only in "no answer within 19 ms", which would hide it.
  let telling: Error | null = null;
  for (;;) {
    try {
      return await attempt(remaining);
    } catch (error) {
      if (error instanceof EtcdRequestError && error.isLeaseNotFound) hooks.leaseLost();
      else if (!isTransient(error) || hooks.closed())
        throw new DcsError(`${operation}: ${(error as Error).message}`, { cause: error });
      if (!(error instanceof EtcdNoAnswerError)) telling = error as Error;
      const pause = Math.min(backoff.next(), deadline - performance.now() - MIN_ATTEMPT_MS);
      if (pause < 0) {
        const last = (error as Error).message;
        const why = telling && telling !== error ? `${telling.message} (the last try: ${last})` : last;
        throw new DcsError(`${operation}: failed within ${Math.round(timeoutMs)} ms: ${why}`, { cause: error });
      }
      await sleep(pause);
    }
  }
}

/**
 * How long a call within an HA cycle may take: what the cycle's budget has left, at most retry_timeout. Throws, sending
 * nothing, once the budget is spent; and when what is left is shorter than etcd's last answer took (`lastAnswerMs`,
 * EtcdClient): the request would be aborted unanswered, and with it the connection the next cycle's keepalive needs.
 * Not for an `essential` call (the read, the lock, the lease), which the cycle cannot do without: it tries whatever is
 * left. A cycle's first call always goes, so the estimate follows etcd back once it is fast again.
 */
export function cycleAllowanceMs(
  operation: string,
  budget: DcsBudget,
  retryTimeoutMs: number,
  lastAnswerMs: number,
  essential = false,
): number {
  const allowedMs = Math.min(retryTimeoutMs, budget.remainingMs());
  if (allowedMs < MIN_ATTEMPT_MS) {
    throw new DcsError(
      `${operation}: not sent, this HA cycle already waited its retry_timeout (${budget.limitMs} ms) for the DCS`,
    );
  }
  if (!essential && allowedMs < retryTimeoutMs && allowedMs < lastAnswerMs) {
    throw new DcsError(
      `${operation}: not sent, ${Math.round(allowedMs)} ms left of this HA cycle's retry_timeout and etcd's last answer took ${Math.round(lastAnswerMs)} ms`,
    );
  }
  return allowedMs;
}
