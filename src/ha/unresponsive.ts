import { PostgresStateName } from '../postgresql/postgres-states';

/**
 * How long a running PostgreSQL has gone without answering the sampler (ms), 0 when it is not
 * running. The sampler asks every second on a connection of its own, each try with a deadline,
 * so this grows only when the server answers nothing at all: stopped, or stuck in I/O.
 */
export function unresponsiveForMs(pgState: PostgresStateName, answeredAt: number, now: number): number {
  if (pgState !== 'running' || answeredAt === 0) return 0;
  return Math.max(0, now - answeredAt);
}

/** Whether the server counts as hung under `postgres_unresponsive_timeout` (seconds, 0: never). */
export function isUnresponsive(unresponsiveMs: number, timeoutSeconds: number): boolean {
  return timeoutSeconds > 0 && unresponsiveMs > timeoutSeconds * 1000;
}
