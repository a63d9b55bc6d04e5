import { systemClock, TimerClock } from '../../common/clock';
import { UpstreamNode } from '../postgres.port';
import { MemoryPostgresServer } from './memory-postgres';
import { MemoryPostgresServerOptions, ServerNetwork } from './memory-state';

/**
 * The servers of one test, by `host:port`, with the clock they share. Settles replication after
 * every change (a streaming replica holds what its upstream has, unless a test paused it), checks
 * fence deadlines against the clock, and hands out deterministic pids and system identifiers.
 *
 * ```ts
 * const clock = new ManualClock();
 * const network = new MemoryPostgresNetwork(clock);
 * const leader = network.addServer({ name: 'node1' });
 * const pg = new MemoryPostgresProcess(leader);
 * ```
 */
export class MemoryPostgresNetwork implements ServerNetwork<MemoryPostgresServer> {
  private readonly servers = new Map<string, MemoryPostgresServer>();
  private lastPid = 100;
  private clusters = 0;
  private settling = false;

  constructor(readonly clock: TimerClock = systemClock) {}

  /** A new server with a missing data directory and no postmaster. */
  addServer(options: MemoryPostgresServerOptions): MemoryPostgresServer {
    const server = new MemoryPostgresServer(this, options);
    const address = addressOf(server);
    if (this.servers.has(address)) throw new Error(`${address} is already taken by ${this.servers.get(address)!.name}`);
    this.servers.set(address, server);
    return server;
  }

  /** The server listening at `node.host:node.port`, whether it runs or not. */
  resolve(node: Pick<UpstreamNode, 'host' | 'port'>): MemoryPostgresServer | null {
    return this.servers.get(addressOf(node)) ?? null;
  }

  /** The server at `node` when `from` can connect to it now: both reachable, it runs and answers. */
  connect(from: MemoryPostgresServer, node: Pick<UpstreamNode, 'host' | 'port'>): MemoryPostgresServer | null {
    const target = this.resolve(node);
    if (!target?.postmaster || target.postmaster.frozen) return null;
    if (target !== from && (!target.reachable || !from.reachable)) return null;
    return target;
  }

  /** The running replicas streaming from `upstream` now. */
  downstreamsOf(upstream: MemoryPostgresServer): MemoryPostgresServer[] {
    return [...this.servers.values()].filter(
      (server) =>
        server.postmaster?.streaming &&
        server.postmaster.upstream &&
        this.resolve(server.postmaster.upstream) === upstream,
    );
  }

  nextPid(): number {
    this.lastPid += 7; // a postmaster's children take the pids in between
    return this.lastPid;
  }

  /** Like initdb's: seconds since the epoch in the high 32 bits, made unique by a counter below them. */
  newSystemIdentifier(): string {
    const seconds = BigInt(Math.floor(this.clock.now() / 1000));
    return ((seconds << 32n) | (BigInt(++this.clusters) << 12n)).toString();
  }

  /** Fences whose deadline the clock has reached stop their postmaster. */
  tick(): void {
    // As the real fence: the deadline is kept as time left on the monotonic clock (MemoryPostgresProcess.armFence).
    const now = this.clock.monotonic();
    for (const server of this.servers.values()) server.checkFence(now);
  }

  /** Lets every WAL receiver take what it can until nothing moves (cascades settle in a few rounds). */
  settle(): void {
    if (this.settling) return;
    this.settling = true;
    try {
      for (let round = 0; round <= this.servers.size + 1; round++) {
        let moved = false;
        for (const server of this.servers.values()) moved = server.receiveFromUpstream() || moved;
        if (!moved) return;
      }
    } finally {
      this.settling = false;
    }
  }
}

function addressOf(node: Pick<UpstreamNode, 'host' | 'port'>): string {
  return `${node.host}:${node.port}`;
}
