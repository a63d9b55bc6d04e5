import { chmod, chown, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresqlConfig } from '../../src/config/config.types';

/** PostgreSQL binaries used by integration tests (override with PG_BIN_DIR). */
export const PG_BIN_DIR = process.env.PG_BIN_DIR ?? '/usr/lib/postgresql/15/bin';
/** The unprivileged OS user PostgreSQL runs as when the tests run as root (see scripts/ensure-pg-user.sh). */
export const PG_OS_USER = process.env.PG_OS_USER ?? 'postgres';

export const TEST_SUPERUSER = { username: 'postgres', password: 'super-secret' };
export const TEST_REPLICATION_USER = { username: 'replicator', password: "rep'li\\cate" };

/** One test node's directories and configuration: `<root>/<name>/data` and `<root>/<name>/state`. */
export interface PgTestNode {
  name: string;
  port: number;
  dataDir: string;
  stateDir: string;
  config: PostgresqlConfig;
}

function osUserIds(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const uid = Number(execFileSync('id', ['-u', PG_OS_USER]).toString().trim());
  const gid = Number(execFileSync('id', ['-g', PG_OS_USER]).toString().trim());
  return { uid, gid };
}

/**
 * A fresh temporary directory (short path: unix socket paths are limited) to hold test nodes, owned by
 * the OS user PostgreSQL runs as, mode 0700.
 */
export async function makePgTempRoot(prefix = 'stator-pg-'): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), prefix));
  const ids = osUserIds();
  if (ids) await chown(root, ids.uid, ids.gid);
  await chmod(root, 0o700);
  return root;
}

/**
 * A PostgresqlConfig for a node listening on 127.0.0.1:`port`, with test credentials and settings that
 * make tests quick (no fsync, and no sync after a clone: nothing here must survive an OS crash).
 */
export function pgTestNode(
  root: string,
  name: string,
  port: number,
  parameters: PostgresqlConfig['parameters'] = {},
): PgTestNode {
  const dataDir = join(root, name, 'data');
  return {
    name,
    port,
    dataDir,
    stateDir: join(root, name, 'state'),
    config: {
      listen: `127.0.0.1:${port}`,
      connect_address: `127.0.0.1:${port}`,
      data_dir: dataDir,
      bin_dir: PG_BIN_DIR,
      authentication: { superuser: { ...TEST_SUPERUSER }, replication: { ...TEST_REPLICATION_USER } },
      parameters: { fsync: false, max_connections: 20, shared_buffers: '16MB', ...parameters },
      basebackup: ['no-sync'],
      pg_hba: [],
      os_user: PG_OS_USER,
    },
  };
}

/**
 * Alive and not a zombie. A postmaster whose fence was killed is reparented to PID 1, which may reap it
 * late, so kill(pid, 0) alone would call it alive.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return true;
  }
}

async function readPid(path: string): Promise<number | null> {
  try {
    const pid = Number((await readFile(path, 'utf8')).split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

async function waitGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (processAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

/**
 * Stops every postmaster and fence of the nodes under `root` by pid (immediate shutdown, then SIGKILL),
 * then deletes `root`. Safe to call when nothing runs.
 */
export async function cleanupPgRoot(root: string): Promise<void> {
  const names = await readdir(root).catch(() => [] as string[]);
  await Promise.all(
    names.map(async (name) => {
      const postmaster = await readPid(join(root, name, 'data', 'postmaster.pid'));
      if (postmaster && processAlive(postmaster)) {
        process.kill(postmaster, 'SIGQUIT');
        if (!(await waitGone(postmaster, 3000))) process.kill(postmaster, 'SIGKILL');
      }
      const fence = await readPid(join(root, name, 'state', 'fence.pid'));
      if (fence && processAlive(fence) && !(await waitGone(fence, 1000))) process.kill(fence, 'SIGKILL');
    }),
  );
  await rm(root, { recursive: true, force: true });
}
