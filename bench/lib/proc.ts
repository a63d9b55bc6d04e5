import { readFileSync } from 'node:fs';

/** Readings from /proc (Linux). */

export function cmdline(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return null;
  }
}

/**
 * `pid` when it is alive and its command line contains `mustContain` (a PID read from a file such as
 * postmaster.pid may be stale and reused by an unrelated process), else null.
 */
export function verifiedPid(pid: number | null | undefined, mustContain: string): number | null {
  if (!pid) return null;
  const line = cmdline(pid);
  return line !== null && line.includes(mustContain) ? pid : null;
}

export interface MemoryReading {
  /** KiB, from /proc/<pid>/status. */
  rss: number;
  rssAnon: number;
  rssFile: number;
  rssShmem: number;
  /** Proportional set size (shared pages divided among the processes mapping them), KiB. */
  pss: number | null;
  threads: number;
}

export function memory(pid: number): MemoryReading | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
    let pss: number | null = null;
    try {
      const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
      pss = Number(/^Pss:\s+(\d+)/m.exec(rollup)?.[1] ?? NaN);
    } catch {
      pss = null;
    }
    return {
      rss: field('VmRSS'),
      rssAnon: field('RssAnon'),
      rssFile: field('RssFile'),
      rssShmem: field('RssShmem'),
      pss,
      threads: field('Threads'),
    };
  } catch {
    return null;
  }
}

const CLOCK_TICKS = 100; // getconf CLK_TCK on Linux x86-64/arm64

/** utime + stime of the process itself (not its children), in seconds; `mainThreadOnly`: of its main thread. */
export function cpuSeconds(pid: number, mainThreadOnly = false): number | null {
  try {
    const stat = readFileSync(mainThreadOnly ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces; the fields after it start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    return (utime + stime) / CLOCK_TICKS;
  } catch {
    return null;
  }
}
