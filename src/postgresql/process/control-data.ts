import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { CommandRunner } from './commands';
import { LocalPostgres } from './local-postgres';

/**
 * How long pg_control must have gone unwritten when pg_controldata read it for that output to be reused. The kernel
 * stamps a write with a coarse clock (one tick, 1 to 10 ms), so a write within the same tick as an earlier one can
 * leave the stamp unchanged; one made after a read that began this long after the last write cannot.
 */
const SETTLED_MS = 1000;

/** What identifies one content of pg_control: a write changes the times, a new data directory the inode. */
interface ControlFileStamp {
  dev: bigint;
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
}

/**
 * pg_controldata's output for the data directory, run again only when pg_control changed. A switchover read it
 * about seven times per node while the file did not change, and each run is a fork of the agent: 8 ms of its main
 * thread on an idle 2-core VM, 50 to 100 ms when the machine is crowded (issue 35, the switchover storm).
 */
export class ControlDataReader {
  private last: { stamp: ControlFileStamp; stdout: string } | null = null;

  constructor(
    private readonly local: LocalPostgres,
    private readonly commands: CommandRunner,
    private readonly wallClockMs: () => number = () => Date.now(),
  ) {}

  /** pg_controldata's stdout (LC_ALL=C); throws what the run throws. */
  async read(): Promise<string> {
    const startedAt = this.wallClockMs();
    const before = await this.stamp();
    if (before && this.last && sameStamp(before, this.last.stamp)) return this.last.stdout;
    const { stdout } = await this.commands.run(this.local.binary('pg_controldata'), ['-D', this.local.dataDir], {
      env: { LC_ALL: 'C' },
    });
    const after = await this.stamp();
    // The change time: a write moves it as it moves the modification time, and nobody can set it back.
    const settled =
      before && after && sameStamp(before, after) && Number(before.ctimeNs / 1_000_000n) <= startedAt - SETTLED_MS;
    this.last = settled ? { stamp: before, stdout } : null;
    return stdout;
  }

  private async stamp(): Promise<ControlFileStamp | null> {
    try {
      const found = await stat(join(this.local.dataDir, 'global', 'pg_control'), { bigint: true });
      return { dev: found.dev, ino: found.ino, size: found.size, mtimeNs: found.mtimeNs, ctimeNs: found.ctimeNs };
    } catch {
      return null;
    }
  }
}

function sameStamp(a: ControlFileStamp, b: ControlFileStamp): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}
