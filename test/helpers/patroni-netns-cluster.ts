import { ChildProcess, spawn } from 'node:child_process';
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
import { PG_PASSWORD, Timing } from '../../bench/lib/cluster';
import { PATRONI_BINARY, patroniNodeConfig, pgUser } from '../../bench/lib/patroni-cluster';
import { NodeNetwork } from '../../scripts/lib/local-cluster';
import { isRunningProcess } from '../../src/common/process-tree';
import { waitFor } from './wait-for';

const PG_OS_USER = process.env.STATOR_PG_OS_USER ?? 'postgres';

/**
 * Patroni 3.0.2 (Debian's `patroni`) on the hosts of a NetnsLab or SitesLab, for a side by side with the Stator
 * cluster of the same bed: the same addresses and ports (8008, 5432), the same etcd members (`etcd3.hosts`), ttl,
 * loop_wait, retry_timeout and PostgreSQL parameters. Each agent runs as the `postgres` OS user in its node's
 * namespace (`ip netns exec <ns> setpriv --reuid postgres ...`: PostgreSQL refuses root) and is stopped by PID.
 */
export class PatroniNetnsCluster {
  private constructor(
    readonly nodes: PatroniNetnsNode[],
    readonly scope: string,
    /** Where a test reads etcd (e.g. `/sync` through the JSON gateway). */
    readonly etcd: { endpoint: string },
  ) {}

  static start(options: {
    nodes: number;
    baseDir: string;
    network: NodeNetwork;
    timing: Timing;
    scope?: string;
    /** More keys of `bootstrap.dcs` (`synchronous_mode`...); `postgresql.parameters` merge with the defaults. */
    dcs?: Record<string, unknown>;
  }): PatroniNetnsCluster {
    const scope = options.scope ?? 'demo';
    mkdirSync(options.baseDir, { recursive: true });
    chmodSync(options.baseDir, 0o755); // the postgres OS user must reach the node directories
    const nodes = Array.from(
      { length: options.nodes },
      (_, i) => new PatroniNetnsNode(i + 1, scope, options.baseDir, options.network, options.timing, options.dcs ?? {}),
    );
    for (const node of nodes) node.start();
    return new PatroniNetnsCluster(nodes, scope, { endpoint: options.network.etcdHosts[0] });
  }

  node(name: string): PatroniNetnsNode {
    const node = this.nodes.find((n) => n.name === name);
    if (!node) throw new Error(`no node ${name}`);
    return node;
  }

  async primaries(): Promise<string[]> {
    const answers = await Promise.all(
      this.nodes.map(async (node) => ((await node.healthCode('/primary')) === 200 ? node.name : null)),
    );
    return answers.filter((name): name is string => name !== null);
  }

  /** Waits until exactly one node (not in `except`) answers 200 on `/primary` and returns it. */
  async waitForLeader(timeoutMs: number, except: string[] = []): Promise<PatroniNetnsNode> {
    const name = await waitFor(
      async () => {
        const primaries = (await this.primaries()).filter((n) => !except.includes(n));
        return primaries.length === 1 ? primaries[0] : null;
      },
      {
        timeoutMs,
        intervalMs: 100,
        description: `one Patroni leader among ${this.nodes.map((n) => n.name).join(', ')}`,
      },
    );
    return this.node(name);
  }

  /**
   * Waits until one node answers 200 on `/primary` and its `replication` (pg_stat_replication) shows every other node
   * streaming, and returns it. Patroni 3.0.2's replicas report no `replication_state`: the leader's view is the one.
   */
  async waitForHealthy(timeoutMs: number): Promise<PatroniNetnsNode> {
    const leader = await waitFor(
      async () => {
        const primaries = await this.primaries();
        if (primaries.length !== 1) return null;
        const candidate = this.node(primaries[0]);
        const replication = ((await candidate.status())?.replication ?? []) as {
          application_name: string;
          state: string;
        }[];
        const streaming = new Set(
          replication.filter((row) => row.state === 'streaming').map((row) => row.application_name),
        );
        const others = this.nodes.filter((node) => node !== candidate);
        return others.every((node) => streaming.has(node.name)) ? candidate : null;
      },
      { timeoutMs, intervalMs: 200, description: 'one Patroni leader and every other node streaming from it' },
    );
    return leader;
  }

  /** Who holds the leader key (`/service/<scope>/leader` in etcd, read through its JSON gateway): null when none. */
  async leaderKey(): Promise<string | null> {
    const key = Buffer.from(`/service/${this.scope}/leader`).toString('base64');
    const response = await fetch(`http://${this.etcd.endpoint}/v3/kv/range`, {
      method: 'POST',
      body: JSON.stringify({ key }),
      signal: AbortSignal.timeout(2000),
    });
    const value = ((await response.json()) as { kvs?: { value: string }[] }).kvs?.[0]?.value;
    return value ? Buffer.from(value, 'base64').toString() : null;
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.stop()));
  }
}

export class PatroniNetnsNode {
  readonly name: string;
  readonly dir: string;
  readonly dataDir: string;
  readonly configPath: string;
  readonly logPath: string;
  private child: ChildProcess | null = null;

  constructor(
    readonly index: number,
    scope: string,
    baseDir: string,
    private readonly network: NodeNetwork,
    timing: Timing,
    dcs: Record<string, unknown>,
  ) {
    this.name = `node${index}`;
    this.dir = join(baseDir, this.name);
    this.dataDir = join(this.dir, 'data');
    this.configPath = join(this.dir, 'patroni.yml');
    this.logPath = join(this.dir, 'patroni.log');
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    writeFileSync(this.configPath, stringify(this.config(scope, timing, dcs)));
    if (process.getuid?.() === 0) {
      const { uid, gid } = pgUser();
      chownSync(this.dir, uid, gid);
      chownSync(this.configPath, uid, gid);
    }
  }

  get apiUrl(): string {
    return `http://${this.network.clientAddress(this.index)}:8008`;
  }

  connectionString(): string {
    return `postgresql://postgres:${PG_PASSWORD}@${this.network.clientAddress(this.index)}:5432/postgres`;
  }

  get pid(): number | null {
    const child = this.child;
    return child && child.exitCode === null && child.signalCode === null ? (child.pid ?? null) : null;
  }

  postmasterPid(): number | null {
    const file = join(this.dataDir, 'postmaster.pid');
    if (!existsSync(file)) return null;
    const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  }

  /** The inode of PG_VERSION: a clone (pg_basebackup) writes a new one, pg_rewind rewrites files in place. */
  pgVersionInode(): number {
    return statSync(join(this.dataDir, 'PG_VERSION')).ino;
  }

  /** Bytes of the agent's log so far, to read what it logged after a given moment (`logSince`). */
  logSize(): number {
    return existsSync(this.logPath) ? statSync(this.logPath).size : 0;
  }

  logSince(offset: number): string[] {
    return readFileSync(this.logPath).subarray(offset).toString('utf8').split('\n').filter(Boolean);
  }

  start(): void {
    const log = openSync(this.logPath, 'a');
    // `ip netns exec` and setpriv exec in turn: the child's PID is Patroni's.
    const asPostgres = ['setpriv', `--reuid=${PG_OS_USER}`, `--regid=${PG_OS_USER}`, '--init-groups'];
    const [command, ...args] = [...this.network.prefix(this.index), ...asPostgres, PATRONI_BINARY, this.configPath];
    this.child = spawn(command, args, {
      cwd: this.dir,
      stdio: ['ignore', log, log],
      env: { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8', HOME: this.dir, PYTHONUNBUFFERED: '1' },
    });
    this.child.once('exit', () => closeSync(log));
  }

  /** kill -9 of the agent, then at once of its postmaster; returns when both are gone. */
  async killAgentAndPostmaster(): Promise<void> {
    const agent = this.pid;
    const postmaster = this.postmasterPid();
    if (!agent || postmaster === null) throw new Error(`${this.name}: no agent or no postmaster to kill`);
    process.kill(agent, 'SIGKILL');
    process.kill(postmaster, 'SIGKILL');
    await waitFor(() => !isRunningProcess(agent) && !isRunningProcess(postmaster), {
      timeoutMs: 5000,
      description: `${this.name}'s agent and postmaster gone`,
    });
  }

  /** Status code of a GET on the node's API (0 when it does not answer within 1 s). */
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
      const response = await fetch(`${this.apiUrl}/patroni`, { signal: AbortSignal.timeout(1000) });
      return (await response.json()) as Record<string, unknown>;
    } catch {
      return null;
    }
  }

  /** SIGTERM (Patroni stops PostgreSQL), SIGKILL after 30 s; then a postmaster left behind is killed by PID. */
  async stop(): Promise<void> {
    const child = this.child;
    const agent = this.pid;
    if (child && agent) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      process.kill(agent, 'SIGTERM');
      const timer = setTimeout(() => this.pid && process.kill(agent, 'SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    }
    const postmaster = this.postmasterPid();
    if (postmaster && isRunningProcess(postmaster)) process.kill(postmaster, 'SIGKILL');
  }

  private config(scope: string, timing: Timing, dcs: Record<string, unknown>): Record<string, unknown> {
    const cluster = this.network.clusterAddress(this.index);
    const base = patroniNodeConfig({
      scope,
      name: this.name,
      dir: this.dir,
      dataDir: this.dataDir,
      etcdEndpoint: this.network.etcdHosts[0],
      etcdHosts: this.network.etcdHosts,
      apiPort: 8008,
      pgPort: 5432,
      timing,
    });
    const bootstrap = base.bootstrap as { dcs: Record<string, unknown> };
    const basePostgresql = bootstrap.dcs.postgresql as { parameters: Record<string, unknown> };
    const extraPostgresql = (dcs.postgresql ?? {}) as { parameters?: Record<string, unknown> };
    const postgresql = base.postgresql as Record<string, unknown>;
    return {
      ...base,
      restapi: { listen: '0.0.0.0:8008', connect_address: `${cluster}:8008` },
      bootstrap: {
        ...bootstrap,
        dcs: {
          ...bootstrap.dcs,
          ...dcs,
          postgresql: {
            ...basePostgresql,
            ...extraPostgresql,
            // As the Stator test clusters (test/helpers/cluster-defaults.ts): nothing waits for the shared disk.
            parameters: { ...basePostgresql.parameters, fsync: 'off', ...extraPostgresql.parameters },
          },
        },
        initdb: [{ encoding: 'UTF8' }, 'no-sync'],
      },
      postgresql: {
        ...postgresql,
        listen: '0.0.0.0:5432',
        connect_address: `${cluster}:5432`,
        // Patroni's own connections over the socket: `localhost` may resolve to ::1, where nothing listens.
        use_unix_socket: true,
        basebackup: [{ checkpoint: 'fast' }, 'no-sync'],
        pg_hba: [
          'local all all trust',
          'host all all 0.0.0.0/0 scram-sha-256',
          'host replication replicator 0.0.0.0/0 scram-sha-256',
        ],
      },
    };
  }
}
