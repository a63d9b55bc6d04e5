import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { waitFor } from './wait-for';

/**
 * Debian's PgBouncer run from the shipped deploy/pgbouncer.ini: only the lines marked `; local`
 * there (addresses, ports, paths) are replaced, so what is tested is what is shipped. It runs as
 * the PostgreSQL OS user (PgBouncer refuses to run as root), in the foreground, stopped by PID.
 */
export const PGBOUNCER_BINARY = process.env.PGBOUNCER_BINARY ?? '/usr/sbin/pgbouncer';
const OS_USER = process.env.STATOR_PG_OS_USER ?? 'postgres';

export interface PgbouncerLocal {
  /** Its own directory: ini, userlist, log, pid file and socket live there. */
  dir: string;
  listenPort: number;
  /** Where every database goes: HAProxy's primary port. */
  upstreamPort: number;
  upstreamHost?: string;
  user: string;
  password: string;
}

export function shippedPgbouncerIni(): string {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'deploy', 'pgbouncer.ini');
    if (existsSync(file) && existsSync(join(dir, 'package.json'))) return readFileSync(file, 'utf8');
  }
  throw new Error(`deploy/pgbouncer.ini not found above ${__dirname}`);
}

/** The shipped ini with its `; local` lines set for this machine; any other line stays as shipped. */
export function localPgbouncerIni(shipped: string, local: PgbouncerLocal): string {
  const values: Record<string, string> = {
    '*': `host=${local.upstreamHost ?? '127.0.0.1'} port=${local.upstreamPort}`,
    listen_addr: '127.0.0.1',
    listen_port: String(local.listenPort),
    unix_socket_dir: local.dir,
    logfile: join(local.dir, 'pgbouncer.log'),
    pidfile: join(local.dir, 'pgbouncer.pid'),
    auth_file: join(local.dir, 'userlist.txt'),
  };
  const lines = shipped.split('\n');
  const replaced = new Set<string>();
  const out = lines.map((line, i) => {
    const match = /^(\S+) = /.exec(line);
    if (!match || !lines[i - 1]?.startsWith('; local')) return line;
    const value = values[match[1]];
    if (value === undefined)
      throw new Error(`deploy/pgbouncer.ini: "${match[1]}" is marked local but has no local value`);
    replaced.add(match[1]);
    return `${match[1]} = ${value}`;
  });
  const missing = Object.keys(values).filter((key) => !replaced.has(key));
  if (missing.length) throw new Error(`deploy/pgbouncer.ini: no "; local" line for ${missing.join(', ')}`);
  return out.join('\n');
}

export class LocalPgbouncer {
  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
    readonly dir: string,
  ) {}

  static async start(local: PgbouncerLocal): Promise<LocalPgbouncer> {
    const ini = join(local.dir, 'pgbouncer.ini');
    writeFileSync(ini, localPgbouncerIni(shippedPgbouncerIni(), local));
    writeFileSync(join(local.dir, 'userlist.txt'), `"${local.user}" "${local.password}"\n`, { mode: 0o600 });
    const owner = osUser();
    if (owner)
      for (const path of [local.dir, ini, join(local.dir, 'userlist.txt')]) chownSync(path, owner.uid, owner.gid);
    const child = spawn(PGBOUNCER_BINARY, [ini], { stdio: 'ignore', ...(owner ?? {}) });
    const exited = new Promise<never>((_, reject) =>
      child.once('exit', (code) => reject(new Error(`pgbouncer exited (${code}); see ${local.dir}/pgbouncer.log`))),
    );
    exited.catch(() => undefined);
    const bouncer = new LocalPgbouncer(child, local.listenPort, local.dir);
    try {
      await Promise.race([
        exited,
        waitFor(() => readFileSync(join(local.dir, 'pgbouncer.log'), 'utf8').includes('process up'), {
          timeoutMs: 10_000,
          description: 'pgbouncer listening',
        }),
      ]);
    } catch (error) {
      await bouncer.stop(); // a PgBouncer that never came up must not outlive the caller
      throw error;
    }
    return bouncer;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  log(): string {
    try {
      return readFileSync(join(this.dir, 'pgbouncer.log'), 'utf8');
    } catch {
      return '';
    }
  }

  /** SIGTERM (immediate shutdown), then SIGKILL if it is still there after 5 s. */
  async stop(): Promise<void> {
    if (!this.child.pid || this.child.exitCode !== null || this.child.signalCode !== null) return;
    const gone = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await gone;
    clearTimeout(timer);
  }
}

/** PgBouncer refuses to run as root: when we are root it runs as the PostgreSQL OS user. */
function osUser(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  return {
    uid: Number(execFileSync('id', ['-u', OS_USER]).toString().trim()),
    gid: Number(execFileSync('id', ['-g', OS_USER]).toString().trim()),
  };
}
