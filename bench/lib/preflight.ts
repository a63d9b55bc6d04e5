import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cpus, release, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { ETCD_BINARY } from '../../scripts/lib/etcd';
import { PG_BIN_DIR } from './cluster';
import { PATRONI_BINARY } from './patroni-cluster';
import { loadAverage, log } from './util';
import { WRK_BINARY } from './wrk';

// What every bench command checks before it starts and records about the machine it ran on.

const REPO_ROOT = findRepoRoot(__dirname);
const WANT_PATRONI = process.env.BENCH_PATRONI !== '0';

/** Checks (and as root installs) what the benchmark needs; returns whether Patroni can be measured. */
export function preflight(notes: string[]): boolean {
  const root = process.getuid?.() === 0;
  let updated = false;
  const install = (pkg: string) => {
    if (!root) return false;
    log(`installing Debian package ${pkg}...`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    if (!updated) execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
    updated = true;
    const result = spawnSync('apt-get', ['install', '-y', '-qq', pkg], { stdio: 'inherit', env });
    return result.status === 0;
  };
  if (!existsSync(ETCD_BINARY) && !install('etcd-server'))
    throw new Error(`etcd is missing (${ETCD_BINARY}): apt-get install etcd-server`);
  if (!existsSync(join(PG_BIN_DIR, 'postgres')))
    throw new Error(`PostgreSQL 15 is missing (${PG_BIN_DIR}): apt-get install postgresql-15`);
  if (!existsSync(join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js')))
    throw new Error('dist/ is missing: run `npm run build` (npm run bench does)');
  if (root) execFileSync('sh', [join(REPO_ROOT, 'scripts', 'ensure-pg-user.sh')], { stdio: 'inherit' });
  if (!existsSync(WRK_BINARY) && !install('wrk'))
    notes.push(`wrk is missing (${WRK_BINARY}) and could not be installed: apt-get install wrk`);
  if (!WANT_PATRONI) {
    notes.push('Patroni not measured (BENCH_PATRONI=0)');
    return false;
  }
  if (!existsSync(PATRONI_BINARY) && !install('patroni')) {
    notes.push(
      `Patroni not measured: ${PATRONI_BINARY} is missing and could not be installed (run as root, or apt-get install patroni)`,
    );
    return false;
  }
  if (!root) {
    notes.push('Patroni not measured: it must run as the postgres OS user, which only root can switch to');
    return false;
  }
  return true;
}

export function environment(patroni: boolean): Record<string, string> {
  const first = (cmd: string, args: string[]) => {
    const r = spawnSync(cmd, args, { timeout: 10_000 });
    return `${r.stdout?.toString() ?? ''}${r.stderr?.toString() ?? ''}`.split('\n')[0].trim() || '?';
  };
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
  return {
    machine: `${cpus().length} CPU (${cpus()[0]?.model ?? '?'}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Linux ${release()}`,
    node: process.version,
    stator: pkg.version,
    patroni: patroni ? first(PATRONI_BINARY, ['--version']) : 'not measured',
    etcd: first(ETCD_BINARY, ['--version']),
    postgresql: first(join(PG_BIN_DIR, 'postgres'), ['--version']),
    wrk: existsSync(WRK_BINARY) ? first(WRK_BINARY, ['-v']) : 'missing',
    loadAtStart: loadAverage(),
  };
}

export function findRepoRoot(from: string): string {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'bin', 'stator.js'))) return dir;
  }
  throw new Error(`no Stator checkout above ${from}`);
}
