import { isAlive } from '../../scripts/lib/local-cluster';
import { ChildProcess } from 'node:child_process';
import { log } from './util';

/**
 * Everything the benchmark starts is registered here and stopped by PID at the end, on failure and
 * on Ctrl-C. Clusters stop gracefully first (agents stop their PostgreSQL), then whatever PID is
 * left (agent, postmaster, fence) is killed. A second Ctrl-C skips the graceful part.
 */
export interface Stoppable {
  label: string;
  stop(): Promise<void>;
  /** Every PID that belongs to it right now (agents, postmasters, helpers). */
  pids(): number[];
}

const stoppables = new Set<Stoppable>();
const children = new Set<ChildProcess>();
let cleaning: Promise<void> | null = null;

export function track(stoppable: Stoppable): void {
  stoppables.add(stoppable);
}

export function untrack(stoppable: Stoppable): void {
  stoppables.delete(stoppable);
}

export function trackChild(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
}

export function killPid(pid: number, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(pid, signal);
  } catch {
    // gone already
  }
}

/** SIGKILL to every known PID, synchronously (last resort and `exit` handler). */
export function killEverythingNow(): void {
  for (const child of children) if (child.pid && child.exitCode === null) killPid(child.pid);
  for (const s of stoppables) for (const pid of s.pids()) killPid(pid);
}

/** Graceful stop of everything registered (bounded), then SIGKILL by PID of anything left. */
export function cleanupAll(): Promise<void> {
  cleaning ??= (async () => {
    for (const child of children) if (child.pid && child.exitCode === null) killPid(child.pid);
    const list = [...stoppables];
    const pidsBefore = list.flatMap((s) => s.pids());
    await Promise.all(
      list.map(async (s) => {
        const timeout = new Promise<void>((resolve) => setTimeout(resolve, 45_000).unref());
        await Promise.race([s.stop().catch((e) => log(`stopping ${s.label}: ${(e as Error).message}`)), timeout]);
      }),
    );
    for (const pid of [...pidsBefore, ...list.flatMap((s) => s.pids())]) if (isAlive(pid)) killPid(pid);
    stoppables.clear();
  })();
  return cleaning;
}

process.once('exit', killEverythingNow);

export { isAlive };
