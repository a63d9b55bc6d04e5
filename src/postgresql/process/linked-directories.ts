import { lstat, readdir, realpath, rm } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The directories a data directory links to, as the reference's remove_data_directory finds them: the WAL
 * directory (`pg_wal`, `pg_xlog` before PostgreSQL 10) and each tablespace (`pg_tblspc/<oid>`), when they are
 * symbolic links. Those are set up on other volumes (initdb's and pg_basebackup's `waldir`, CREATE TABLESPACE).
 */
export async function linkedDirectories(dataDir: string): Promise<string[]> {
  const tablespaces = await readdir(join(dataDir, 'pg_tblspc')).catch(() => [] as string[]);
  const links = [
    join(dataDir, 'pg_wal'),
    join(dataDir, 'pg_xlog'),
    ...tablespaces.filter((name) => /^\d+$/.test(name)).map((name) => join(dataDir, 'pg_tblspc', name)),
  ];
  const targets: string[] = [];
  for (const link of links) {
    if (!(await lstat(link).catch(() => null))?.isSymbolicLink()) continue;
    const target = await realpath(link).catch(() => null);
    if (target) targets.push(target);
  }
  return targets;
}

/**
 * Removes what the data directory links to, before the data directory itself goes: otherwise a clone made again
 * finds the WAL directory not empty (pg_basebackup's `--waldir` refuses it) and the old WAL stays on its volume. A
 * target that cannot go itself (a mount point, a parent the OS user cannot write) is left empty.
 */
export async function removeLinkedDirectories(dataDir: string): Promise<void> {
  for (const target of await linkedDirectories(dataDir)) {
    const removed = await rm(target, { recursive: true, force: true }).then(
      () => true,
      () => false,
    );
    if (removed) continue;
    const entries = await readdir(target).catch(() => [] as string[]);
    await Promise.all(entries.map((entry) => rm(join(target, entry), { recursive: true, force: true })));
  }
}
