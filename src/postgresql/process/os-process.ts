import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

export function sleep(ms: number): Promise<void> {
  return new Promise((resolveSleep) => setTimeout(resolveSleep, ms));
}

export async function waitUntil(condition: () => boolean, timeoutMs: number, pollMs = 20): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() >= deadline) return false;
    await sleep(pollMs);
  }
  return true;
}

/** Alive and not a zombie (a killed postmaster may linger as one until its new parent reaps it). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true; // no /proc: kill(0) is all we know
  }
}

export function signalQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    /* already gone */
  }
}

/** The pid in `postmaster.pid` of `dataDir` when that process is alive and is a postgres. */
export async function livePostmasterFromPidFile(dataDir: string): Promise<number | null> {
  let text: string;
  try {
    text = await readFile(join(dataDir, 'postmaster.pid'), 'utf8');
  } catch {
    return null;
  }
  const pid = Number(text.split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isProcessAlive(pid)) return null;
  try {
    const command = await readFile(`/proc/${pid}/comm`, 'utf8');
    if (!/postgres|postmaster/.test(command)) return null; // the pid was reused by something else
  } catch {
    /* no /proc: trust the liveness check */
  }
  return pid;
}
