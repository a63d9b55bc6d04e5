import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildStatusDocument } from '../../../src/api/status-document';
import { ManualClock } from '../../../src/common/clock';
import { Logger } from '../../../src/common/logger';
import { loadConfig } from '../../../src/config/load-config';
import { MemoryDcs, MemoryDcsBackend } from '../../../src/dcs/memory-dcs';
import { NewEvent } from '../../../src/events/event';
import { FailsafeCall } from '../../../src/ha/failsafe/failsafe-caller';
import { HaNode } from '../../../src/ha/ha-node';
import { PeerStatus, readingFromStatus } from '../../../src/ha/peer-probe';
import {
  MemoryPostgresNetwork,
  MemoryPostgresProcess,
  MemoryPostgresQuery,
  MemoryPostgresServer,
} from '../../../src/postgresql/memory';

const SCOPE = 'sim';

/** `bootstrap.dcs` of every simulated node: timing, plus any other dynamic setting. */
export type SimulatedDcsConfig = { ttl: number; loop_wait: number; retry_timeout: number; [setting: string]: unknown };
const STEP_MS = 100;

/** One agent of the simulation: its HaNode over in-memory ports, its server, and what it recorded. */
export interface SimulatedNode {
  name: string;
  ha: HaNode;
  server: MemoryPostgresServer;
  dcs: MemoryDcs;
  events: NewEvent[];
  log: string[];
  /** False once the test killed or froze its agent. */
  alive: boolean;
}

/**
 * A cluster of real HaNodes over the in-memory DCS and PostgreSQL adapters, on a ManualClock: the
 * HA cycle, the sampler, the scheduler, leases and fences all run on simulated time, so a failover
 * that takes ttl seconds takes milliseconds, and the same steps give the same cluster every time.
 */
export class SimulatedCluster {
  readonly clock = new ManualClock();
  readonly backend = new MemoryDcsBackend(this.clock);
  readonly network = new MemoryPostgresNetwork(this.clock);
  readonly nodes: SimulatedNode[] = [];
  private readonly dir = mkdtempSync(join(tmpdir(), 'stator-sim-'));
  private readonly dcsConfigs = new Map<string, SimulatedDcsConfig>();
  private readonly postgresqlSections = new Map<string, Record<string, unknown>>();

  /** `postgresql`: more keys of a node's local `postgresql` section, by node name. */
  static async start(
    count: number,
    dcs: SimulatedDcsConfig = { ttl: 10, loop_wait: 2, retry_timeout: 3 },
    postgresql: (name: string) => Record<string, unknown> = () => ({}),
  ): Promise<SimulatedCluster> {
    const cluster = new SimulatedCluster();
    for (let index = 1; index <= count; index++) cluster.add(`node${index}`, dcs, postgresql(`node${index}`));
    for (const node of cluster.nodes) await node.ha.start();
    return cluster;
  }

  node(name: string): SimulatedNode {
    const found = this.nodes.find((node) => node.name === name);
    if (!found) throw new Error(`no node ${name}`);
    return found;
  }

  /** Nodes whose server runs as a primary. */
  primaries(): string[] {
    return this.nodes
      .filter((node) => node.server.isRunning && node.server.inRecovery === false)
      .map((node) => node.name);
  }

  leaderKey(): string | null {
    return this.backend.get(`/service/${SCOPE}/leader`)?.value ?? null;
  }

  /** Lets `ms` of simulated time pass in steps, letting every agent's promises settle after each. */
  async run(ms: number): Promise<void> {
    for (let passed = 0; passed < ms; passed += STEP_MS) await this.step();
  }

  /** Runs until `condition` holds; fails after `limitMs` of simulated time. */
  async runUntil(condition: () => boolean, limitMs: number, description: string): Promise<number> {
    // Time passed, not what the wall clock says: a test may jump it.
    const from = this.clock.monotonic();
    while (!condition()) {
      if (this.clock.monotonic() - from > limitMs)
        throw new Error(`${limitMs} ms of simulated time passed without: ${description}\n${this.describe()}`);
      await this.step();
    }
    return this.clock.monotonic() - from;
  }

  /** One leader holding the key and running as primary, every other node streaming from it. */
  healthy(): string | null {
    const leader = this.leaderKey();
    if (!leader || this.primaries().join() !== leader) return null;
    return this.nodes.every((node) => node.name === leader || node.server.isStreaming) ? leader : null;
  }

  /** The agent dies (kill -9): its loop and timers stop; PostgreSQL goes on under its fence. */
  async killAgent(name: string): Promise<void> {
    const node = this.node(name);
    node.alive = false;
    await node.ha.stop(false);
  }

  /** The agent stops (SIGTERM, PostgreSQL left running, as when paused) and a new one starts beside the same server. */
  async restartAgent(name: string): Promise<void> {
    const index = this.nodes.findIndex((node) => node.name === name);
    const old = this.nodes[index];
    old.alive = false;
    await old.ha.stop(false);
    await old.dcs.close({ keepLease: true });
    this.nodes[index] = this.agent(name, old.server, this.dcsConfigs.get(name)!, this.postgresqlSections.get(name)!);
    await this.nodes[index].ha.start();
  }

  async stop(): Promise<void> {
    // A cycle may be waiting on simulated time (a reload to take effect): time goes on until every loop ended.
    let stopped = false;
    const stopping = Promise.all(this.nodes.filter((n) => n.alive).map((node) => node.ha.stop(false))).then(() => {
      stopped = true;
    });
    for (let step = 0; !stopped && step < 600; step++) await this.step();
    await stopping;
    for (const node of this.nodes) await node.dcs.close();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Each node's last verdict, for failure messages. */
  describe(): string {
    return this.nodes
      .map((node) => `${node.name}: ${node.ha.view().pgState}/${node.ha.view().role}: ${node.ha.view().verdict}`)
      .join('\n');
  }

  /** The `/sync` key as the leader wrote it, or null. */
  syncKey(): { leader: string | null; quorum?: number; sync_standby: string | null } | null {
    const value = this.backend.get(`/service/${SCOPE}/sync`)?.value;
    return value ? JSON.parse(value) : null;
  }

  /** The `/status` key as the leader wrote it, or null. */
  statusKey(): { optime: number; slots?: Record<string, number> } | null {
    const value = this.backend.get(`/service/${SCOPE}/status`)?.value;
    return value ? JSON.parse(value) : null;
  }

  /** A new node joins the running cluster, with the first node's dynamic settings. */
  async join(name: string): Promise<SimulatedNode> {
    const [first] = this.nodes;
    this.add(name, this.dcsConfigs.get(first.name)!);
    const node = this.node(name);
    await node.ha.start();
    return node;
  }

  /** Changes `/config` as PATCH /config would (keys set to null are removed). */
  patchConfig(patch: Record<string, unknown>): void {
    const key = `/service/${SCOPE}/config`;
    const current = JSON.parse(this.backend.get(key)?.value ?? '{}') as Record<string, unknown>;
    for (const [name, value] of Object.entries(patch)) {
      if (value === null) delete current[name];
      else current[name] = value;
    }
    this.backend.put(key, JSON.stringify(current));
  }

  private add(name: string, dcsConfig: SimulatedDcsConfig, postgresql: Record<string, unknown> = {}): void {
    this.dcsConfigs.set(name, dcsConfig);
    this.postgresqlSections.set(name, postgresql);
    this.nodes.push(this.agent(name, this.network.addServer({ name }), dcsConfig, postgresql));
  }

  /** A new agent for `server`, with its own DCS client and records. */
  private agent(
    name: string,
    server: MemoryPostgresServer,
    dcsConfig: SimulatedDcsConfig,
    postgresql: Record<string, unknown>,
  ): SimulatedNode {
    const configPath = join(this.dir, `${name}.yml`);
    writeFileSync(
      configPath,
      JSON.stringify({
        scope: SCOPE,
        name,
        restapi: { listen: `${name}:8008`, connect_address: `${name}:8008` },
        etcd3: { hosts: ['127.0.0.1:2379'] },
        bootstrap: { dcs: dcsConfig },
        postgresql: {
          listen: `${server.host}:${server.port}`,
          connect_address: `${server.host}:${server.port}`,
          data_dir: server.dataDirPath,
          authentication: {
            superuser: { username: 'postgres', password: 'x' },
            replication: { username: 'replicator', password: 'x' },
          },
          ...postgresql,
        },
      }),
    );
    const { config } = loadConfig(configPath, {});
    const dcs = new MemoryDcs(this.backend, { namespace: '/service', scope: SCOPE, name, ttlSeconds: dcsConfig.ttl });
    const events: NewEvent[] = [];
    const log: string[] = [];
    const logger = quietLogger(log);
    const ha = new HaNode({
      config,
      dcs,
      pg: new MemoryPostgresProcess(server),
      query: new MemoryPostgresQuery(server),
      events: { record: (event) => events.push(event) },
      clock: this.clock,
      logger,
      version: 'sim',
      probePeer: async (peer) => this.probe(peer),
      callFailsafe: async (apiUrl, call) => this.callFailsafe(apiUrl, call),
    });
    return { name, ha, server, dcs, events, log, alive: true };
  }

  /** What a peer's REST API would answer: nothing from a dead agent. */
  private probe(name: string) {
    const peer = this.node(name);
    if (!peer.alive) return { name, reachable: false };
    const document = buildStatusDocument(
      peer.ha.view(),
      { scope: SCOPE, version: 'sim', productKey: 'stator' },
      this.clock.now(),
    );
    return readingFromStatus(name, document as PeerStatus);
  }

  /** A member's answer to `POST /failsafe`: its API is reached by the host name in the URL; a dead agent answers nothing. */
  private callFailsafe(apiUrl: string, call: FailsafeCall): { accepted: boolean; answer: string } {
    const peer = this.nodes.find((node) => node.name === new URL(apiUrl).hostname);
    if (!peer?.alive) return { accepted: false, answer: 'connect ECONNREFUSED' };
    const { status, text } = peer.ha.acceptFailsafe(call);
    return { accepted: status === 200 && text === 'Accepted', answer: `${status} ${text}` };
  }

  private async step(): Promise<void> {
    this.clock.advance(STEP_MS);
    this.network.tick();
    this.backend.expireLeases();
    this.network.settle();
    // Several turns of the event loop: each await in an agent's cycle takes one.
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
  }
}

function quietLogger(lines: string[]): Logger {
  const keep = (level: string) => (message: string) => void lines.push(`${level}: ${message}`);
  return {
    debug: () => undefined,
    info: keep('INFO'),
    warning: keep('WARNING'),
    error: keep('ERROR'),
    critical: keep('CRITICAL'),
  } as unknown as Logger;
}
