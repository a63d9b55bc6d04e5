import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { isAlive, LocalNode } from '../local-cluster';
import { waitFor } from '../wait-for';

/**
 * Each node's WAL on a small filesystem of its own (a tmpfs this run mounts, as a WAL volume is in production), for
 * the fault that fills the leader's (issue 34: disk full). Mounting needs root. initdb's and pg_basebackup's
 * `waldir` put the WAL there; pg_wal is a link to it.
 */
const VOLUME_SIZE = '512m';

/** Where node `index`'s WAL volume is mounted; its WAL directory is `pg_wal` inside. */
export function walVolumeOf(baseDir: string, index: number): string {
  return join(baseDir, 'wal-volumes', `node${index}`);
}

function postgresOwner(): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** Mounts one tmpfs per node, owned by PostgreSQL's OS user; returns the way to unmount them all. */
export function mountWalVolumes(baseDir: string, nodes: number): () => void {
  if (process.getuid?.() !== 0) throw new Error('the WAL volumes (disk-full fault) need root to mount a tmpfs');
  const { uid, gid } = postgresOwner();
  const mounted: string[] = [];
  for (let index = 1; index <= nodes; index++) {
    const volume = walVolumeOf(baseDir, index);
    mkdirSync(volume, { recursive: true });
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${VOLUME_SIZE},mode=0700`, 'tmpfs', volume]);
    mounted.push(volume);
    chownSync(volume, uid, gid);
  }
  return () => {
    for (const volume of mounted) execFileSync('umount', ['-l', volume]);
  };
}

/** A file that takes every free byte of the node's WAL volume (what an archive backlog or a stray copy does). */
export function fillWalVolume(node: LocalNode): string {
  const ballast = join(walVolumeOf(join(node.dir, '..'), node.index), 'ballast');
  try {
    execFileSync('dd', ['if=/dev/zero', `of=${ballast}`, 'bs=1M'], { stdio: 'ignore' });
  } catch {
    // dd stops at "No space left on device": the volume is full
  }
  return ballast;
}

export function freeWalVolume(ballast: string): void {
  if (existsSync(ballast)) rmSync(ballast);
}

/**
 * Writes on the leader until its postmaster is gone: with no byte free, PostgreSQL PANICs once it needs a WAL
 * segment it has not yet got. Resolves false when it still runs after `timeoutMs`.
 */
export async function writeUntilPanic(node: LocalNode, timeoutMs: number): Promise<boolean> {
  const postmaster = node.postmasterPid();
  if (postmaster === null) return true;
  const client = new Client({ connectionString: node.connectionString(), connectionTimeoutMillis: 2000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    // Stored as written, never compressed: every row puts its 4 kB into the WAL.
    await client.query('CREATE TABLE IF NOT EXISTS chaos_filler (x text)');
    await client.query('ALTER TABLE chaos_filler ALTER COLUMN x SET STORAGE EXTERNAL');
    return await waitFor(
      async () => {
        await client
          .query('INSERT INTO chaos_filler SELECT repeat(md5(random()::text), 128) FROM generate_series(1, 500)')
          .catch(() => undefined);
        return !isAlive(postmaster);
      },
      { timeoutMs, intervalMs: 10, description: `${node.name}'s postmaster gone after its WAL volume filled up` },
    ).then(
      () => true,
      () => false,
    );
  } catch {
    return !isAlive(postmaster);
  } finally {
    await client.end().catch(() => undefined);
  }
}
