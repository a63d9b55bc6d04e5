import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { EtcdHandle, startEtcd } from '../../scripts/lib/etcd';
import { freePort } from '../../scripts/lib/ports';
import { BenchCluster, BenchNode, PG_BIN_DIR, PG_PASSWORD, postmasterOf, SharedEtcd, Timing } from './cluster';
import { isAlive, killPid } from './cleanup';
import { sleep } from './util';

export const PATRONI_BINARY = process.env.PATRONI_BINARY ?? '/usr/bin/patroni';
const PG_OS_USER = process.env.STATOR_PG_OS_USER ?? 'postgres';

/**
 * A 3-node Patroni cluster (Debian's `patroni`), configured like the reference's own tests
 * (spec 4.4) and like the Stator cluster it is compared with: its own etcd from the same binary,
 * the same PostgreSQL 15, ttl / loop_wait / retry_timeout, parameters and authentication. Each
 * node is one `patroni <node.yml>` process running as the `postgres` OS user (PostgreSQL refuses
 * root), started and stopped by PID.
 */
export class PatroniBenchCluster implements BenchCluster {
  readonly kind = 'patroni' as const;
  readonly statusPath = '/patroni';
  readonly label: string;

  private constructor(
    private readonly etcd: EtcdHandle,
    readonly nodes: PatroniNode[],
    readonly scope: string,
    readonly timing: Timing,
    private readonly etcdShared: boolean,
  ) {
    this.label = `patroni(ttl ${timing.ttl})`;
  }

  /** With `sharedEtcd`, the cluster uses it (every member in `etcd3.hosts`) instead of starting one, and stop() leaves it running. */
  static async start(
    baseDir: string,
    timing: Timing,
    scope: string,
    sharedEtcd?: SharedEtcd,
  ): Promise<PatroniBenchCluster> {
    mkdirSync(baseDir, { recursive: true });
    chmodSync(baseDir, 0o755); // the postgres OS user must reach the node directories
    const etcd = sharedEtcd?.handle ?? (await startEtcd());
    const etcdHosts = sharedEtcd?.endpoints ?? [etcd.endpoint];
    const nodes: PatroniNode[] = [];
    for (let index = 1; index <= 3; index++) {
      nodes.push(new PatroniNode(index, baseDir, scope, timing, etcdHosts, await freePort(), await freePort()));
    }
    const cluster = new PatroniBenchCluster(etcd, nodes, scope, timing, Boolean(sharedEtcd));
    for (const node of nodes) node.startAgent();
    return cluster;
  }

  get etcdEndpoint() {
    return this.etcd.endpoint;
  }
  get etcdPid() {
    return this.etcd.pid;
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
    if (!this.etcdShared) await this.etcd.stop();
  }

  pids(): number[] {
    const pids: number[] = [];
    for (const node of this.nodes) for (const pid of [node.agentPid(), node.postmasterPid()]) if (pid) pids.push(pid);
    return pids;
  }
}

class PatroniNode implements BenchNode {
  readonly name: string;
  readonly dir: string;
  readonly dataDir: string;
  readonly configPath: string;
  readonly logPath: string;
  private child: ChildProcess | null = null;

  constructor(
    index: number,
    baseDir: string,
    private readonly scope: string,
    private readonly timing: Timing,
    private readonly etcdHosts: string[],
    readonly apiPort: number,
    readonly pgPort: number,
  ) {
    this.name = `node${index}`;
    this.dir = join(baseDir, this.name);
    this.dataDir = join(this.dir, 'data');
    this.configPath = join(this.dir, 'patroni.yml');
    this.logPath = join(this.dir, 'patroni.log');
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    writeFileSync(this.configPath, stringify(this.config()));
    const { uid, gid } = pgUser();
    if (process.getuid?.() === 0) {
      chownSync(this.dir, uid, gid);
      chownSync(this.configPath, uid, gid);
    }
  }

  get apiUrl() {
    return `http://127.0.0.1:${this.apiPort}`;
  }

  agentPid(): number | null {
    const child = this.child;
    return child && child.exitCode === null && child.signalCode === null ? (child.pid ?? null) : null;
  }

  postmasterPid(): number | null {
    const file = join(this.dataDir, 'postmaster.pid');
    if (!existsSync(file)) return null;
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
    return postmasterOf(this.dataDir, Number.isInteger(pid) && pid > 0 ? pid : null);
  }

  helperPids(): number[] {
    return [];
  }

  startAgent(): void {
    const log = openSync(this.logPath, 'a');
    const { uid, gid } = pgUser();
    const root = process.getuid?.() === 0;
    this.child = spawn(PATRONI_BINARY, [this.configPath], {
      cwd: this.dir,
      stdio: ['ignore', log, log],
      env: { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8', HOME: this.dir, PYTHONUNBUFFERED: '1' },
      ...(root ? { uid, gid } : {}),
    });
    closeSync(log);
  }

  killAgentNow(): void {
    const pid = this.agentPid();
    if (pid) killPid(pid);
  }

  signalAgent(signal: 'SIGSTOP' | 'SIGCONT'): void {
    const pid = this.agentPid();
    if (pid) process.kill(pid, signal);
  }

  async agentExited(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise((resolve) => child.once('exit', resolve));
  }

  /** SIGTERM (Patroni stops PostgreSQL), SIGKILL after 30 s; then a postmaster left behind is killed by PID. */
  async stop(): Promise<void> {
    const pid = this.agentPid();
    if (pid) {
      const exited = this.agentExited();
      killPid(pid, 'SIGTERM');
      const timer = setTimeout(() => killPid(pid), 30_000);
      await exited;
      clearTimeout(timer);
    }
    const postmaster = this.postmasterPid();
    if (postmaster) {
      killPid(postmaster, 'SIGQUIT'); // immediate shutdown
      for (let i = 0; i < 50 && isAlive(postmaster); i++) await sleep(100);
      if (isAlive(postmaster)) killPid(postmaster);
    }
  }

  private config(): Record<string, unknown> {
    return patroniNodeConfig({
      scope: this.scope,
      name: this.name,
      dir: this.dir,
      dataDir: this.dataDir,
      etcdEndpoint: this.etcdHosts[0],
      etcdHosts: this.etcdHosts,
      apiPort: this.apiPort,
      pgPort: this.pgPort,
      timing: this.timing,
    });
  }
}

/** Where one Patroni node lives, for its patroni.yml. */
export interface PatroniNodeSettings {
  scope: string;
  name: string;
  dir: string;
  dataDir: string;
  etcdEndpoint: string;
  /** Every etcd member, when there are several (default: `etcdEndpoint` alone). */
  etcdHosts?: string[];
  apiPort: number;
  pgPort: number;
  timing: Timing;
}

/**
 * A node's patroni.yml, configured like the reference's own tests (spec 4.4): the bench's Patroni
 * cluster, and the migration suite's nodes (where Stator reads the very same file).
 */
export function patroniNodeConfig(node: PatroniNodeSettings): Record<string, unknown> {
  const t = node.timing;
  return {
    scope: node.scope,
    namespace: '/service/',
    name: node.name,
    log: { level: 'INFO' },
    restapi: { listen: `127.0.0.1:${node.apiPort}`, connect_address: `127.0.0.1:${node.apiPort}` },
    etcd3: { hosts: node.etcdHosts ?? [node.etcdEndpoint] },
    bootstrap: {
      dcs: {
        ttl: t.ttl,
        loop_wait: t.loopWait,
        retry_timeout: t.retryTimeout,
        maximum_lag_on_failover: 1048576,
        postgresql: {
          use_pg_rewind: true,
          use_slots: true,
          parameters: { max_connections: 50, shared_buffers: '32MB' },
        },
      },
      initdb: [{ encoding: 'UTF8' }],
    },
    postgresql: {
      listen: `127.0.0.1:${node.pgPort}`,
      connect_address: `127.0.0.1:${node.pgPort}`,
      data_dir: node.dataDir,
      bin_dir: PG_BIN_DIR,
      pgpass: join(node.dir, 'pgpass'),
      authentication: {
        superuser: { username: 'postgres', password: PG_PASSWORD },
        replication: { username: 'replicator', password: 'replicator-secret' },
        rewind: { username: 'rewind_user', password: 'rewind-secret' },
      },
      basebackup: [{ checkpoint: 'fast' }],
      parameters: { unix_socket_directories: node.dir },
      pg_hba: [
        'local all all trust',
        'host all all 127.0.0.1/32 scram-sha-256',
        'host replication replicator 127.0.0.1/32 scram-sha-256',
      ],
    },
    tags: { nofailover: false, noloadbalance: false, clonefrom: false, nosync: false },
    // Never the machine's real /dev/watchdog: a bench or test that kills a fence or an agent must not reset the machine.
    watchdog: { mode: 'off' },
  };
}

let cachedUser: { uid: number; gid: number } | null = null;
/** The uid and gid PostgreSQL and Patroni run as: `postgres` when this process is root, else this process's own. */
export function pgUser(): { uid: number; gid: number } {
  if (!cachedUser) {
    if (process.getuid?.() !== 0) return { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 };
    cachedUser = {
      uid: Number(execFileSync('id', ['-u', PG_OS_USER]).toString().trim()),
      gid: Number(execFileSync('id', ['-g', PG_OS_USER]).toString().trim()),
    };
  }
  return cachedUser;
}
