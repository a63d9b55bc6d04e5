import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { stringify } from 'yaml';
import { EtcdHandle, startEtcd } from './etcd';
import { freePort } from './ports';
import { AGENT_ENVIRONMENT, AGENT_NODE_FLAGS } from '../../src/cli/agent-node-flags';
import { descendantsOf, isRunningProcess } from '../../src/common/process-tree';
import { waitFor } from './wait-for';
import type { LocalClusterOptions } from './local-cluster-options';
import { nodeConfig } from './node-config';

// The options' types live apart (node-config.ts reads them too); the many callers import them from here.
export type { LocalClusterOptions, NodeNetwork } from './local-cluster-options';

/** The repository root, from the sources (tests) or from `dist/` (the demo). */
const REPO_ROOT = findRepoRoot(__dirname);
const AGENT = join(REPO_ROOT, 'bin', 'stator.js');
const PG_OS_USER = process.env.STATOR_PG_OS_USER ?? 'postgres';

/**
 * A cluster of real Stator agents on this machine: one etcd from the Debian binary plus N agents,
 * each a separate `stator <config.yml>` process with its own PostgreSQL. Used by `npm run demo`
 * and by the integration tests. Everything binds to 127.0.0.1 and is stopped by PID.
 */
export class LocalCluster {
  private constructor(
    readonly etcd: EtcdHandle,
    readonly nodes: LocalNode[],
    readonly scope: string,
    private readonly etcdShared = false,
  ) {}

  static async start(options: LocalClusterOptions): Promise<LocalCluster> {
    const scope = options.scope ?? 'demo';
    mkdirSync(options.baseDir, { recursive: true });
    // PostgreSQL runs as its own OS user, which must be able to reach the node directories.
    chmodSync(options.baseDir, 0o755);
    const etcd = options.network?.etcd ?? options.sharedEtcd ?? (await startEtcd(options.etcd));
    await options.prepareEtcd?.(etcd);
    const nodes: LocalNode[] = [];
    for (let index = 0; index < options.nodes; index++) {
      if (options.network) {
        // A host of its own: the usual ports, no collision possible.
        nodes.push(new LocalNode(index + 1, scope, options, etcd.endpoint, 8008, 5432));
        continue;
      }
      const kept = options.nodePorts?.[index];
      const apiPort = kept?.api ?? (options.apiPort ? options.apiPort + index : await freePort());
      const pgPort = kept?.pg ?? (options.pgPort ? options.pgPort + index : await freePort());
      nodes.push(new LocalNode(index + 1, scope, options, etcd.endpoint, apiPort, pgPort));
    }
    const cluster = new LocalCluster(etcd, nodes, scope, Boolean(options.sharedEtcd));
    for (const node of nodes) node.start();
    return cluster;
  }

  node(name: string): LocalNode {
    const node = this.nodes.find((n) => n.name === name);
    if (!node) throw new Error(`no node ${name}`);
    return node;
  }

  /** The names of the nodes whose API says they run as primary with the lock (`/primary` 200). */
  async primaries(): Promise<string[]> {
    const answers = await Promise.all(
      this.nodes.map(async (node) => ((await node.healthCode('/primary')) === 200 ? node.name : null)),
    );
    return answers.filter((name): name is string => name !== null);
  }

  /** Waits until exactly one node answers 200 on `/primary` and returns it. */
  async waitForLeader(timeoutMs: number, except: string[] = []): Promise<LocalNode> {
    let leader: string | null = null;
    await waitFor(
      async () => {
        const primaries = (await this.primaries()).filter((name) => !except.includes(name));
        leader = primaries.length === 1 ? primaries[0] : null;
        return leader !== null;
      },
      { timeoutMs, intervalMs: 100, description: `one leader among ${this.nodes.map((n) => n.name).join(', ')}` },
    );
    return this.node(leader!);
  }

  /**
   * Waits until one node answers 200 on `/primary` and every other node streams, in the same reading
   * (a leader seen for a moment before it hands over does not count), and returns the leader.
   */
  async waitForHealthy(timeoutMs: number): Promise<LocalNode> {
    // Streaming on the leader's timeline: a replica whose WAL forked off it may report `streaming` for a moment.
    const streaming = async (node: LocalNode, timeline: unknown) => {
      const status = await node.status();
      return (
        status?.state === 'running' &&
        status.role === 'replica' &&
        status.replication_state === 'streaming' &&
        status.timeline === timeline
      );
    };
    let leader: LocalNode | null = null;
    try {
      await waitFor(
        async () => {
          const primaries = await this.primaries();
          if (primaries.length !== 1) return false;
          const candidate = this.node(primaries[0]);
          // A lock holder answers 200 on /primary as soon as it holds the lock (as the reference's does), before its
          // server has promoted (a load balancer drain comes first): healthy only once the server says so itself.
          const leaderStatus = await candidate.status();
          if (leaderStatus?.role !== 'primary' && leaderStatus?.role !== 'standby_leader') return false;
          const timeline = leaderStatus.timeline;
          const followers = this.nodes.filter((node) => node !== candidate);
          if (!(await Promise.all(followers.map((node) => streaming(node, timeline)))).every(Boolean)) return false;
          leader = candidate;
          return (await this.primaries()).join() === candidate.name; // still the one leader after the reads
        },
        { timeoutMs, intervalMs: 200, description: 'one leader and every other node streaming' },
      );
    } catch (error) {
      const tails = this.nodes.map((node) => `--- ${node.name} (${JSON.stringify(node.lastVerdicts(12))})`);
      throw new Error(`${(error as Error).message}\n${tails.join('\n')}`, { cause: error });
    }
    return leader!;
  }

  /** Waits until `names` all run as replicas that stream (read from their status, so noloadbalance nodes count too). */
  async waitForStreaming(names: string[], timeoutMs: number): Promise<void> {
    const streaming = async (name: string) => {
      const status = await this.node(name).status();
      return status?.state === 'running' && status.role === 'replica' && status.replication_state === 'streaming';
    };
    try {
      await waitFor(async () => (await Promise.all(names.map(streaming))).every(Boolean), {
        timeoutMs,
        intervalMs: 200,
        description: `${names.join(', ')} streaming`,
      });
    } catch (error) {
      // What each waiting node last said, so a failure in CI can be understood without its files.
      const tails = names.map((name) => `--- ${name} (${JSON.stringify(this.node(name).lastVerdicts(12))})`);
      throw new Error(`${(error as Error).message}\n${tails.join('\n')}`, { cause: error });
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.stop()));
    if (!this.etcdShared) await this.etcd.stop();
  }

  /** A power cut: every agent, fence, postmaster, backend and etcd dies by SIGKILL at once; nothing is cleaned up. */
  async powerCut(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.powerCut()));
    await this.etcd.restart();
  }

  /**
   * Starts every agent again on its kept data directory, after a power cut or a stop. etcd restarts
   * with its data, or with `emptyEtcd` as a new, empty etcd on the same address.
   */
  async restartAll({ emptyEtcd = false } = {}): Promise<void> {
    if (emptyEtcd) await this.etcd.restart({ empty: true });
    for (const node of this.nodes) node.start();
  }
}

export class LocalNode {
  readonly name: string;
  readonly dir: string;
  readonly dataDir: string;
  readonly stateDir: string;
  readonly configPath: string;
  readonly logPath: string;
  private child: ChildProcess | null = null;

  constructor(
    readonly index: number,
    readonly scope: string,
    private readonly options: LocalClusterOptions,
    readonly etcdEndpoint: string,
    readonly apiPort: number,
    readonly pgPort: number,
  ) {
    this.name = options.nodeName?.(index) ?? `node${index}`;
    this.dir = join(options.baseDir, this.name);
    this.dataDir = join(this.dir, 'data');
    this.stateDir = join(this.dir, 'state');
    this.configPath = join(this.dir, 'stator.yml');
    this.logPath = join(this.dir, 'stator.log');
    mkdirSync(this.dir, { recursive: true });
    ownedByPostgresUser(this.dir);
    writeFileSync(this.configPath, stringify(nodeConfig(this, this.options)));
  }

  /** Where this process reaches the node. */
  get clientHost(): string {
    return this.options.network?.clientAddress(this.index) ?? '127.0.0.1';
  }

  get apiUrl(): string {
    return `http://${this.clientHost}:${this.apiPort}`;
  }

  get pid(): number | null {
    return this.child?.exitCode === null && this.child.signalCode === null ? (this.child.pid ?? null) : null;
  }

  /** libpq connection string as the superuser. */
  connectionString(database = 'postgres'): string {
    return `postgresql://postgres:${encodeURIComponent(this.options.pgPassword ?? 'postgres')}@${this.clientHost}:${this.pgPort}/${database}`;
  }

  /** Starts the agent; `nodeBinary`: on another Node than this process's (a rolling upgrade onto another line). */
  start(nodeBinary = process.execPath): void {
    const log = openSync(this.logPath, 'a');
    const prefix = this.options.network?.prefix(this.index) ?? this.options.agentPrefix ?? [];
    const agent = this.options.agentProgram ? [this.options.agentProgram] : [nodeBinary, ...AGENT_NODE_FLAGS, AGENT];
    const [command, ...args] = [...prefix, ...agent, this.configPath];
    this.child = spawn(command, args, {
      stdio: ['ignore', this.options.echo ? 'pipe' : log, this.options.echo ? 'pipe' : log],
      env: {
        ...process.env,
        ...AGENT_ENVIRONMENT,
        ...this.options.agentEnv,
        ...this.options.agentEnvFor?.(this.index),
      },
    });
    if (this.options.echo) {
      const prefix = `[${this.name}] `;
      const forward = (chunk: Buffer) => {
        writeFileSync(log, chunk);
        for (const line of chunk.toString().split('\n').filter(Boolean)) process.stdout.write(prefix + line + '\n');
      };
      this.child.stdout!.on('data', forward);
      this.child.stderr!.on('data', forward);
    }
    this.child.once('exit', () => closeSync(log));
  }

  signal(signal: NodeJS.Signals): void {
    if (this.pid) process.kill(this.pid, signal);
  }

  /** SIGKILL of the agent alone; PostgreSQL and its fence keep running. */
  async killAgent(): Promise<void> {
    const child = this.child;
    if (!child || !this.pid) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(child.pid!, 'SIGCONT');
    process.kill(child.pid!, 'SIGKILL');
    await exited;
  }

  /** SIGKILL of the fence alone (not its process group): its postmaster runs on, an orphan without a dead man's switch. */
  async killFence(): Promise<void> {
    const fence = this.fencePid();
    if (!fence || !isRunningProcess(fence)) return;
    process.kill(fence, 'SIGKILL');
    await waitFor(() => !isRunningProcess(fence), { timeoutMs: 5000, description: `${this.name}'s fence gone` });
  }

  /** SIGKILL of the fence and of the agent at once; the postmaster and its backends run on, orphans. */
  async killFenceAndAgent(): Promise<void> {
    const fenceGone = this.killFence(); // signalled before its first await: both signals leave together
    await this.killAgent();
    await fenceGone;
  }

  /**
   * SIGKILL of the agent and of the fence's whole process group (the fence, its postmaster and every
   * backend), as a power cut leaves them: postmaster.pid and shared memory stay behind.
   */
  async powerCut(): Promise<void> {
    const fence = this.fencePid();
    // PostgreSQL's children each lead a process group of their own: the fence's group does not hold them.
    const postmasterBefore = this.postmasterPid();
    const backends = postmasterBefore && isAlive(postmasterBefore) ? descendantsOf(postmasterBefore) : [];
    if (fence && isAlive(fence)) {
      try {
        process.kill(-fence, 'SIGKILL');
      } catch {
        // the group is gone already
      }
    }
    const postmaster = this.postmasterPid();
    for (const pid of [postmaster, ...backends]) {
      if (pid && isAlive(pid)) process.kill(pid, 'SIGKILL');
    }
    await this.killAgent();
    const survivors = () =>
      [postmaster, fence, ...backends].filter((pid): pid is number => pid !== null && isRunningProcess(pid));
    await waitFor(() => survivors().length === 0, { timeoutMs: 5000, description: `${this.name}'s processes gone` });
  }

  /** The last `count` log lines of the agent that are not routine (`no action`, `in progress`). */
  lastVerdicts(count: number): string[] {
    if (!existsSync(this.logPath)) return [];
    const lines = readFileSync(this.logPath, 'utf8')
      .split('\n')
      .filter((line) => line && !/no action\.|in progress$/.test(line));
    return lines.slice(-count);
  }

  /** The postmaster's PID from `postmaster.pid`, or null. */
  postmasterPid(): number | null {
    return readPid(join(this.dataDir, 'postmaster.pid'));
  }

  fencePid(): number | null {
    return readPid(join(this.stateDir, 'fence.pid'));
  }

  /** Status code of a GET on the node's API (0 when it does not answer). */
  async healthCode(path: string): Promise<number> {
    try {
      const response = await fetch(this.apiUrl + path, { signal: AbortSignal.timeout(1000) });
      await response.arrayBuffer();
      return response.status;
    } catch {
      return 0;
    }
  }

  async status(): Promise<Record<string, unknown> | null> {
    try {
      const path = this.options.compat === 'patroni' ? 'patroni' : 'stator';
      const response = await fetch(`${this.apiUrl}/${path}`, { signal: AbortSignal.timeout(1000) });
      return (await response.json()) as Record<string, unknown>;
    } catch {
      return null;
    }
  }

  /** SIGTERM (the agent stops PostgreSQL), SIGKILL after 30 s; then any postmaster or fence left is killed by PID. */
  async stop(): Promise<void> {
    await this.stopAgent();
    for (const pid of [this.fencePid(), this.postmasterPid()]) {
      if (pid && isAlive(pid)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  }

  /** SIGTERM of the agent alone (SIGKILL after 30 s), as `systemctl stop` does: it stops PostgreSQL unless paused. */
  async stopAgent(): Promise<void> {
    const child = this.child;
    if (!child || !this.pid) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(child.pid!, 'SIGCONT');
    process.kill(child.pid!, 'SIGTERM');
    const timer = setTimeout(() => this.pid && process.kill(child.pid!, 'SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  }
}

function findRepoRoot(from: string): string {
  for (let dir = from; dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'bin', 'stator.js'))) return dir;
  }
  throw new Error(`no Stator checkout above ${from}`);
}

function readPid(path: string): number | null {
  if (!existsSync(path)) return null;
  const pid = Number(readFileSync(path, 'utf8').split('\n')[0]);
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** PostgreSQL must own its directories; when we run as root, hand the node directory to its OS user. */
function ownedByPostgresUser(dir: string): void {
  if (process.getuid?.() !== 0) return;
  const uid = Number(execFileSync('id', ['-u', PG_OS_USER]).toString().trim());
  const gid = Number(execFileSync('id', ['-g', PG_OS_USER]).toString().trim());
  chownSync(dir, uid, gid);
}
