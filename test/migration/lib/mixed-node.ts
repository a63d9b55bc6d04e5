import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { PG_BIN_DIR } from '../../../bench/lib/cluster';
import { patroniNodeConfig, pgUser } from '../../../bench/lib/patroni-cluster';
import { query } from '../../../bench/lib/sql';
import { AGENT_ENVIRONMENT, AGENT_NODE_FLAGS } from '../../../src/cli/agent-node-flags';
import { descendantsOf, isRunningProcess } from '../../../src/common/process-tree';
import { waitFor } from '../../../scripts/lib/wait-for';

export type AgentKind = 'patroni' | 'stator';

const PATRONI = process.env.PATRONI_BINARY ?? '/usr/bin/patroni';
const STATOR = join(__dirname, '..', '..', '..', 'bin', 'stator.js');

export interface NodeSettings {
  index: number;
  baseDir: string;
  scope: string;
  etcdEndpoint: string;
  apiPort: number;
  pgPort: number;
  timing: { ttl: number; loopWait: number; retryTimeout: number };
}

/**
 * One node of a cluster whose agent can be swapped: a data directory and one `patroni.yml`, run either
 * by Debian's `patroni` (as the postgres OS user, as the bench does) or by `stator` on the very same file
 * with `STATOR_COMPAT=patroni`. Processes are stopped by PID.
 */
export class MixedNode {
  readonly name: string;
  readonly dir: string;
  readonly dataDir: string;
  readonly configPath: string;
  agent: AgentKind | null = null;
  private child: ChildProcess | null = null;
  /** Which agent ran each time, in order: the node's history across the migration. */
  readonly agentsRun: AgentKind[] = [];

  constructor(readonly settings: NodeSettings) {
    this.name = `node${settings.index}`;
    this.dir = join(settings.baseDir, this.name);
    this.dataDir = join(this.dir, 'data');
    this.configPath = join(this.dir, 'patroni.yml');
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    writeFileSync(this.configPath, stringify(this.config()));
    if (process.getuid?.() === 0) {
      const { uid, gid } = pgUser();
      chownSync(this.dir, uid, gid);
      chownSync(this.configPath, uid, gid);
    }
  }

  get apiUrl(): string {
    return `http://127.0.0.1:${this.settings.apiPort}`;
  }

  get pgPort(): number {
    return this.settings.pgPort;
  }

  get logPath(): string {
    return join(this.dir, `${this.agent ?? 'none'}.log`);
  }

  logOf(kind: AgentKind): string {
    const path = join(this.dir, `${kind}.log`);
    return existsSync(path) ? readFileSync(path, 'utf8') : '';
  }

  agentPid(): number | null {
    const child = this.child;
    return child && child.exitCode === null && child.signalCode === null ? (child.pid ?? null) : null;
  }

  postmasterPid(): number | null {
    return readPid(join(this.dataDir, 'postmaster.pid'));
  }

  fencePid(): number | null {
    return readPid(join(`${this.dataDir}.stator`, 'fence.pid'));
  }

  start(kind: AgentKind): void {
    if (this.agentPid()) throw new Error(`${this.name} already runs ${this.agent}`);
    this.agent = kind;
    this.agentsRun.push(kind);
    const log = openSync(this.logPath, 'a');
    if (kind === 'patroni') {
      const root = process.getuid?.() === 0;
      this.child = spawn(PATRONI, [this.configPath], {
        cwd: this.dir,
        stdio: ['ignore', log, log],
        env: { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8', HOME: this.dir, PYTHONUNBUFFERED: '1' },
        ...(root ? pgUser() : {}),
      });
    } else {
      this.child = spawn(process.execPath, [...AGENT_NODE_FLAGS, STATOR, this.configPath], {
        stdio: ['ignore', log, log],
        env: { ...process.env, ...AGENT_ENVIRONMENT, STATOR_COMPAT: 'patroni' },
      });
    }
    closeSync(log);
  }

  /** SIGTERM: either agent stops its PostgreSQL (a leader hands over first); SIGKILL after 40 s. */
  async stop(): Promise<void> {
    const child = this.child;
    const pid = this.agentPid();
    if (child && pid) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      process.kill(pid, 'SIGTERM');
      const timer = setTimeout(() => isRunningProcess(pid) && process.kill(pid, 'SIGKILL'), 40_000);
      await exited;
      clearTimeout(timer);
    }
    await waitFor(() => !this.postmasterAlive() && !this.fenceAlive(), {
      timeoutMs: 20_000,
      description: `${this.name}'s PostgreSQL stopped`,
    });
    this.child = null;
  }

  /** kill -9 of the agent and the postmaster with its backends (a Stator fence is left to act alone). */
  async killAgentAndPostmaster(): Promise<void> {
    const postmaster = this.postmasterPid();
    const backends = postmaster && isRunningProcess(postmaster) ? descendantsOf(postmaster) : [];
    const agent = this.agentPid();
    for (const pid of [agent, postmaster, ...backends]) if (pid && isRunningProcess(pid)) process.kill(pid, 'SIGKILL');
    await waitFor(() => ![agent, postmaster].some((pid) => pid && isRunningProcess(pid)), {
      timeoutMs: 5000,
      description: `${this.name} killed`,
    });
    this.child = null;
  }

  /** Kills what is left before another agent starts: a fence that outlived its agent, a stray postmaster. */
  async clearLeftovers(): Promise<void> {
    for (const pid of [this.fencePid(), this.postmasterPid()])
      if (pid && isRunningProcess(pid)) process.kill(pid, 'SIGKILL');
    await waitFor(() => !this.postmasterAlive() && !this.fenceAlive(), {
      timeoutMs: 5000,
      description: `${this.name}'s leftovers gone`,
    });
  }

  /**
   * SIGSTOP to the node's WAL receiver: nothing more is received (nor replayed), so the position it
   * publishes (the greater of received and replayed, for either agent) stays where it is. Resolves with
   * the function that lets it run again (SIGCONT).
   */
  async stopWalReceiver(): Promise<() => void> {
    const pid = await waitFor(
      async () => (await query<{ pid: number }>(this.pgPort, 'SELECT pid FROM pg_stat_wal_receiver'))[0]?.pid ?? null,
      {
        timeoutMs: 10_000,
        description: `${this.name}'s WAL receiver`,
      },
    );
    process.kill(pid, 'SIGSTOP');
    return () => {
      if (isRunningProcess(pid)) process.kill(pid, 'SIGCONT');
    };
  }

  postmasterAlive(): boolean {
    const pid = this.postmasterPid();
    return pid !== null && isRunningProcess(pid);
  }

  fenceAlive(): boolean {
    const pid = this.fencePid();
    return pid !== null && isRunningProcess(pid);
  }

  /** The data directory's inode: the same number after a swap means no reclone. */
  dataDirInode(): number {
    return statSync(this.dataDir).ino;
  }

  systemIdentifier(): string {
    const text = execFileSync(join(PG_BIN_DIR, 'pg_controldata'), ['-D', this.dataDir], {
      encoding: 'utf8',
      env: { LC_ALL: 'C', PATH: process.env.PATH },
    });
    return /Database system identifier:\s+(\d+)/.exec(text)?.[1] ?? '';
  }

  async status(): Promise<Record<string, unknown> | null> {
    try {
      const response = await fetch(`${this.apiUrl}/patroni`, { signal: AbortSignal.timeout(1000) });
      return (await response.json()) as Record<string, unknown>;
    } catch {
      return null;
    }
  }

  async writable(): Promise<boolean> {
    try {
      const rows = await query<{ transaction_read_only: string }>(this.pgPort, 'SHOW transaction_read_only');
      return rows[0]?.transaction_read_only === 'off';
    } catch {
      return false;
    }
  }

  /** Names of the members streaming from this node's server. */
  async streamingReplicas(): Promise<string[]> {
    try {
      const rows = await query<{ application_name: string }>(
        this.pgPort,
        "SELECT application_name FROM pg_stat_replication WHERE state = 'streaming'",
      );
      return rows.map((row) => row.application_name);
    } catch {
      return [];
    }
  }

  /**
   * The reference's patroni.yml, as the bench writes it (Stator reads the same file), without waits for the disk:
   * no fsync by the server, none after initdb or a clone. Nothing here must survive an OS crash (a kill -9 leaves
   * the page cache), and the machine's other jobs share the disk.
   */
  private config(): Record<string, unknown> {
    const { scope, etcdEndpoint, apiPort, pgPort, timing } = this.settings;
    const config = patroniNodeConfig({
      scope,
      name: this.name,
      dir: this.dir,
      dataDir: this.dataDir,
      etcdEndpoint,
      apiPort,
      pgPort,
      timing,
    });
    const bootstrap = config.bootstrap as { initdb: unknown[] };
    const postgresql = config.postgresql as { basebackup: unknown[]; parameters: Record<string, unknown> };
    bootstrap.initdb = [...bootstrap.initdb, 'no-sync'];
    postgresql.basebackup = [...postgresql.basebackup, 'no-sync'];
    postgresql.parameters = { ...postgresql.parameters, fsync: 'off' };
    return config;
  }

  /** Rewrites the node's tags in its patroni.yml (read by the next agent started, or on reload). */
  setTags(tags: Record<string, unknown>): void {
    const config = this.config();
    config.tags = { ...(config.tags as object), ...tags };
    writeFileSync(this.configPath, stringify(config));
  }
}

function readPid(file: string): number | null {
  if (!existsSync(file)) return null;
  const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

/** The base directory must be reachable by the postgres OS user. */
export function openBaseDir(dir: string): void {
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755);
}
