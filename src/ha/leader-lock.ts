import { Actor } from 'xstate';
import { errorText } from '../common/error-text';
import { Logger } from '../common/logger';
import { Dcs } from '../dcs/dcs.port';
import { PostgresProcess } from '../postgresql/postgres.port';
import { leadershipMachine } from './leadership.machine';
import { NodeEvents } from './node-events';

/** Seconds of the lease the fence keeps in hand: the primary stops this long before the lease can expire. */
export function fenceSafetyMarginMs(ttlSeconds: number): number {
  return Math.max(2, Math.min(5, ttlSeconds * 0.25)) * 1000;
}

export interface LeaderLockDeps {
  dcs: Dcs;
  pg: PostgresProcess;
  leadership: Actor<typeof leadershipMachine>;
  events: NodeEvents;
  logger: Logger;
  ttlSeconds: () => number;
  /** Whether the server runs as a primary now: its fence stays armed until it no longer does. */
  serverIsPrimary: () => boolean;
}

/**
 * The leader key as this node holds it: each acquisition, loss and release is a transition of the
 * `leadership` machine and a cluster fact; every refresh re-arms the fence so that PostgreSQL
 * stops before the lease can expire.
 */
export class LeaderLock {
  private validUntil = 0;
  /** Held through failsafe mode since the DCS stopped answering; a refresh ends it. */
  private inFailsafe = false;

  constructor(private readonly deps: LeaderLockDeps) {}

  /** Epoch ms until which the lock is known to be ours (0 when not leader). */
  get lockValidUntil(): number {
    return this.validUntil;
  }

  get held(): boolean {
    return this.deps.leadership.getSnapshot().value === 'leader';
  }

  async refresh(): Promise<'refreshed' | 'refresh_failed'> {
    const lease = await this.deps.dcs.refreshLeader().catch((e) => {
      this.deps.logger.warning(`failed to refresh leader lock: ${errorText(e)}`);
      return null;
    });
    if (lease) {
      this.inFailsafe = false;
      this.hold(lease.validUntil);
      if (!this.held) this.deps.leadership.send({ type: 'LOCK_ACQUIRED', reason: 'leader key still held by this node' });
      return 'refreshed';
    }
    this.lost('failed to update leader lock in DCS');
    return 'refresh_failed';
  }

  async acquire(): Promise<'acquired' | 'not_acquired'> {
    const lease = await this.deps.dcs.acquireLeader().catch((e) => {
      this.deps.logger.warning(`failed to acquire leader lock: ${errorText(e)}`);
      return null;
    });
    if (!lease) return 'not_acquired';
    this.hold(lease.validUntil);
    this.deps.leadership.send({ type: 'LOCK_ACQUIRED', reason: 'won the leader race' });
    this.deps.events.recordCluster('leader.acquired', 'won the leader race');
    return 'acquired';
  }

  /** Takes the key whatever it holds: the node that just initialized the cluster. */
  async force(reason: string): Promise<void> {
    const lease = await this.deps.dcs.forceLeader();
    this.hold(lease.validUntil);
    this.deps.leadership.send({ type: 'LOCK_ACQUIRED', reason });
  }

  /**
   * The DCS cannot be reached, but every member accepted this leader (failsafe mode): it stays
   * leader, its fence armed to stop PostgreSQL before `validUntil` unless the next round succeeds.
   */
  holdInFailsafe(validUntil: number): void {
    if (!this.held) return;
    if (this.validUntil > 0 && this.validUntil < validUntil && !this.inFailsafe) {
      this.deps.events.recordCluster('failsafe.activated', 'DCS is not accessible; every member accepted this leader');
    }
    this.inFailsafe = true;
    this.hold(Math.max(this.validUntil, validUntil));
  }

  /** The key is no longer ours (someone else's, gone, or unreadable). */
  lost(reason: string): void {
    if (this.held) {
      this.deps.leadership.send({ type: 'LOCK_LOST', reason });
      this.deps.events.recordCluster('leader.lost', reason);
    }
    this.validUntil = 0;
    this.inFailsafe = false;
  }

  async release(reason: string): Promise<void> {
    const released = await this.deps.dcs.releaseLeader().catch(() => false);
    if (this.held) {
      this.deps.leadership.send({ type: 'LOCK_RELEASED', reason });
      this.deps.events.recordCluster('leader.released', reason, { deleted: released });
    }
    this.validUntil = 0;
    this.inFailsafe = false;
    if (!this.deps.serverIsPrimary()) this.deps.pg.disarmFence();
  }

  /** Re-arms the fence while this node holds the lock; disarms it once it is not a primary. */
  keepFence(): void {
    if (this.held && this.validUntil > 0) this.armFence();
    else if (!this.deps.serverIsPrimary()) this.deps.pg.disarmFence();
  }

  private hold(validUntil: number): void {
    this.validUntil = validUntil;
    this.armFence();
  }

  private armFence(): void {
    this.deps.pg.armFence(this.validUntil - fenceSafetyMarginMs(this.deps.ttlSeconds()));
  }
}
