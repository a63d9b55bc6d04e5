import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitForOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** What is awaited, for the error message. */
  description: string;
}

/**
 * Polls `probe` until it returns a truthy value, and returns that value. Errors thrown by the
 * probe count as "not yet". Throws with the description (and the probe's last error) on timeout.
 */
export async function waitFor<T>(probe: () => T | Promise<T>, options: WaitForOptions): Promise<NonNullable<T>> {
  const { timeoutMs = 5000, intervalMs = 50, description } = options;
  const deadline = performance.now() + timeoutMs;
  let lastError: unknown = null;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      lastError = error;
    }
    if (performance.now() >= deadline) {
      const cause = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for: ${description}${cause}`);
    }
    await sleep(intervalMs);
  }
}
