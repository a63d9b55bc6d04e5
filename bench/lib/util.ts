import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

/** Milliseconds since the epoch with sub-millisecond precision (comparable with the agents' `Date.now()`). */
export function now(): number {
  return performance.timeOrigin + performance.now();
}

export { sleep };

export function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export interface Spread {
  min: number;
  median: number;
  max: number;
  n: number;
}

export function spread(values: number[]): Spread {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return { min: NaN, median: NaN, max: NaN, n: 0 };
  return { min: Math.min(...finite), median: median(finite), max: Math.max(...finite), n: finite.length };
}

/** Polls `probe` every `intervalMs` until it returns a truthy value or `timeoutMs` passes (then null). */
export async function pollUntil<T>(
  probe: () => Promise<T | null | undefined | false>,
  timeoutMs: number,
  intervalMs: number,
): Promise<T | null> {
  const deadline = now() + timeoutMs;
  for (;;) {
    const started = now();
    try {
      const value = await probe();
      if (value) return value;
    } catch {
      // not yet
    }
    if (now() >= deadline) return null;
    const wait = intervalMs - (now() - started);
    if (wait > 0) await sleep(wait);
  }
}

export function log(message: string): void {
  const stamp = new Date().toISOString().slice(11, 23);
  process.stdout.write(`[bench ${stamp}] ${message}\n`);
}

export function loadAverage(): string {
  return loadavg()
    .map((v) => v.toFixed(2))
    .join(' ');
}
