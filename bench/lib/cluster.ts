import { join } from 'node:path';
import { EtcdHandle } from '../../scripts/lib/etcd';
import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { httpCode, httpJson } from './http';
import { killPid, Stoppable } from './cleanup';
import { verifiedPid } from './proc';

export type Kind = 'stator' | 'patroni';

export interface Timing {
  ttl: number;
  loopWait: number;
  retryTimeout: number;
}

export const PG_PASSWORD = 'postgres';
export const PG_BIN_DIR = '/usr/lib/postgresql/15/bin';

/** An etcd that several clusters share (`npm run fleet-bench`): every member's endpoint, and a handle that stop() leaves running. */
export interface SharedEtcd {
  handle: EtcdHandle;
  endpoints: string[];
}

/** One agent + its PostgreSQL, whatever the agent is. */
export interface BenchNode {
  readonly name: string;
  readonly apiUrl: string;
  readonly pgPort: number;
  readonly dataDir: string;
  readonly logPath: string;
  /** The agent's process (the Node process for Stator, the Python process for Patroni). */
  agentPid(): number | null;
  /** The postmaster, from postmaster.pid, verified against its command line. */
  postmasterPid(): number | null;
  /** Other long-lived processes of the agent (Stator's fence), verified. */
  helperPids(): number[];
  /** SIGKILL of the agent, synchronous (no waiting for the exit). */
  killAgentNow(): void;
  /** SIGSTOP / SIGCONT of the agent process (a frozen agent). */
  signalAgent(signal: 'SIGSTOP' | 'SIGCONT'): void;
  /** Resolves once the agent process has exited. */
  agentExited(): Promise<void>;
  /** Starts the agent again (after a kill). */
  startAgent(): void;
}

export interface BenchCluster extends Stoppable {
  readonly kind: Kind;
  readonly timing: Timing;
  readonly scope: string;
  readonly etcdEndpoint: string;
  /** The etcd process the cluster talks to (with a shared etcd, the member its handle stands for). */
  readonly etcdPid: number;
  /** `/stator` or `/patroni`. */
  readonly statusPath: string;
  readonly nodes: BenchNode[];
}

export function postmasterOf(dataDir: string, pidFromFile: number | null): number | null {
  return verifiedPid(pidFromFile, dataDir);
}

/** Nodes answering 200 on `/primary`. */
export async function primaries(cluster: BenchCluster, timeoutMs = 1000): Promise<BenchNode[]> {
  const codes = await Promise.all(cluster.nodes.map((n) => httpCode(`${n.apiUrl}/primary`, timeoutMs)));
  return cluster.nodes.filter((_n, i) => codes[i] === 200);
}

export async function status(
  cluster: BenchCluster,
  node: BenchNode,
  timeoutMs = 1000,
): Promise<Record<string, unknown> | null> {
  return httpJson(node.apiUrl + cluster.statusPath, timeoutMs);
}

class StatorBenchNode implements BenchNode {
  constructor(private readonly node: LocalNode) {}
  get name() {
    return this.node.name;
  }
  get apiUrl() {
    return this.node.apiUrl;
  }
  get pgPort() {
    return this.node.pgPort;
  }
  get dataDir() {
    return this.node.dataDir;
  }
  get logPath() {
    return this.node.logPath;
  }
  agentPid() {
    return this.node.pid;
  }
  postmasterPid() {
    return postmasterOf(this.node.dataDir, this.node.postmasterPid());
  }
  helperPids() {
    const fence = verifiedPid(this.node.fencePid(), 'fence');
    return fence ? [fence] : [];
  }
  killAgentNow() {
    const pid = this.node.pid;
    if (pid) killPid(pid);
  }
  signalAgent(signal: 'SIGSTOP' | 'SIGCONT') {
    this.node.signal(signal);
  }
  agentExited() {
    return this.node.killAgent();
  }
  startAgent() {
    this.node.start();
  }
}

/** A 3-node Stator cluster from scripts/lib/local-cluster.ts (its own etcd unless it is given one to share, `stator` processes). */
export class StatorBenchCluster implements BenchCluster {
  readonly kind = 'stator' as const;
  readonly statusPath = '/stator';
  readonly nodes: BenchNode[];
  readonly label: string;

  private constructor(
    private readonly cluster: LocalCluster,
    readonly timing: Timing,
    label?: string,
  ) {
    this.nodes = cluster.nodes.map((n) => new StatorBenchNode(n));
    this.label = label ?? `stator(ttl ${timing.ttl})`;
  }

  /**
   * `variant`: another code or launch setting of the agent (bench/lib/agent-variant.ts), under its own label;
   * `sharedEtcd`: an etcd cluster shared with other clusters (the fleet bench).
   */
  static async start(
    baseDir: string,
    timing: Timing,
    scope: string,
    variant?: { label: string; agentProgram: string; nodes?: number },
    sharedEtcd?: SharedEtcd,
  ): Promise<StatorBenchCluster> {
    const cluster = await LocalCluster.start({
      nodes: variant?.nodes ?? 3,
      baseDir: join(baseDir),
      scope,
      ...(sharedEtcd && { sharedEtcd: sharedEtcd.handle, etcd3: { hosts: sharedEtcd.endpoints } }),
      ttl: timing.ttl,
      loopWait: timing.loopWait,
      retryTimeout: timing.retryTimeout,
      pgPassword: PG_PASSWORD,
      compat: 'stator',
      agentProgram: variant?.agentProgram,
    });
    return new StatorBenchCluster(cluster, timing, variant && `stator ${variant.label}`);
  }

  get scope() {
    return this.cluster.scope;
  }
  get etcdEndpoint() {
    return this.cluster.etcd.endpoint;
  }
  get etcdPid() {
    return this.cluster.etcd.pid;
  }

  stop(): Promise<void> {
    return this.cluster.stop();
  }

  pids(): number[] {
    const pids: number[] = [];
    for (const node of this.nodes) {
      for (const pid of [node.agentPid(), node.postmasterPid(), ...node.helperPids()]) if (pid) pids.push(pid);
    }
    return pids;
  }
}
