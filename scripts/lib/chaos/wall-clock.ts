import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * One node's wall clock under libfaketime: the agent, its fence and its PostgreSQL read the offset
 * from a file on every clock call; their monotonic clocks stay true, as when NTP or an operator
 * steps the clock. Debian's `libfaketime` (.ci/run installs it).
 */
export const FAKETIME_LIBRARY = `/usr/lib/${process.arch === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu/faketime/libfaketimeMT.so.1`;

/** The offset file of the node whose directory is `nodeDir`. */
export function wallClockFile(nodeDir: string): string {
  return join(nodeDir, 'faketime-offset');
}

/** Sets the node's wall clock `offsetSeconds` away from the true time (0: true again). */
export function setWallClockOffset(nodeDir: string, offsetSeconds: number): void {
  writeFileSync(wallClockFile(nodeDir), `${offsetSeconds >= 0 ? '+' : ''}${offsetSeconds}\n`);
}

/** The environment that puts an agent started in `nodeDir` under libfaketime, its clock true to begin with. */
export function wallClockEnvironment(nodeDir: string): Record<string, string> {
  if (!existsSync(FAKETIME_LIBRARY)) throw new Error(`${FAKETIME_LIBRARY} is missing: apt-get install libfaketime`);
  if (!existsSync(wallClockFile(nodeDir))) setWallClockOffset(nodeDir, 0);
  return {
    LD_PRELOAD: FAKETIME_LIBRARY,
    FAKETIME_TIMESTAMP_FILE: wallClockFile(nodeDir),
    FAKETIME_NO_CACHE: '1',
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  };
}
