import { ActorRefFrom } from 'xstate';
import { errorText } from '../common/error-text';
import { TimerClock } from '../common/clock';
import { Logger } from '../common/logger';
import { Dcs } from '../dcs/dcs.port';
import type { FenceSettings } from '../config/fence-config';
import { FenceWatchdog, LeaderTerm, PostgresProcess } from '../postgresql/postgres.port';
import { leadershipMachine } from './leadership.machine';
import { NodeEvents } from './node-events';

/** Seconds of the lease the fence keeps in hand: the primary stops this long before the lease can expire. */
export function fenceSafetyMarginMs(ttlSeconds: number): number {
  return Math.max(2, Math.min(5, ttlSeconds * 0.25)) * 1000;
}

export interface LeaderLockDeps {
  /** The lease's end is on its monotonic clock; the fence is told it as wall-clock time, read at the moment it is sent. */
  clock: TimerClock;
  dcs: Dcs;
  pg: PostgresProcess;
  leadership: ActorRefFrom<typeof leadershipMachine>;
  events: NodeEvents;
  logger: Logger;
  ttlSeconds: () => number;
  /** Whether the server runs as a primary now: its fence stays armed until it no longer does. */
  serverIsPrimary: () => boolean;
  /** Maintenance mode: PostgreSQL is the operator's, and the fence ends no term on its own. */
  paused: () => boolean;
  fenceSettings: () => FenceSettings;
  /** The hardware watchdog the fence holds while this node leads (each arm pets it); none: it closes it. */
  watchdog?: () => FenceWatchdog | undefined;
}

/**
 * The leader key as this node holds it: each acquisition, loss and release is a transition of the
 * `leadership` machine and a cluster fact; every refresh re-arms the fence so that PostgreSQL
 * stops before the lease can expire.
 */
export class LeaderLock {
  private releasing = false;

  constructor(private readonly deps: LeaderLockDeps) {}

  /** Until when the lock is known to be ours on the monotonic clock (0 when not leader), from the machine's context. */
  get lockValidUntil(): number {
    return this.deps.leadership.getSnapshot().context.validUntil;
  }

  get held(): boolean {
    return this.deps.leadership.getSnapshot().value === 'leader';
  }

  /**
   * With `keepWhenUnanswered` (failsafe mode may keep this leader), a refresh the DCS did not answer
   * leaves the lock held and says `dcs_unreachable`: as the reference, whose failed refresh raises the
   * DCS error that sends the cycle to its failsafe check. A key that is no longer ours is lost either way.
   */
  async refresh(keepWhenUnanswered = false): Promise<'refreshed' | 'refresh_failed' | 'dcs_unreachable'> {
    let unanswered = false;
    const lease = await this.deps.dcs.refreshLeader().catch((e) => {
      this.deps.logger.warning(`failed to refresh leader lock: ${errorText(e)}`);
      unanswered = true;
      return null;
    });
    if (unanswered && keepWhenUnanswered) return 'dcs_unreachable';
    if (lease) {
      if (this.held) this.deps.leadership.send({ type: 'LOCK_REFRESHED', validUntil: lease.validUntil });
      else
        this.deps.leadership.send({
          type: 'LOCK_ACQUIRED',
          reason: 'leader key still held by this node',
          validUntil: lease.validUntil,
        });
      this.armFence();
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
    this.take('won the leader race', lease.validUntil);
    this.deps.events.recordCluster('leader.acquired', 'won the leader race');
    return 'acquired';
  }

  /** Takes the key whatever it holds: the node that just initialized the cluster. */
  async force(reason: string): Promise<void> {
    const lease = await this.deps.dcs.forceLeader();
    this.take(reason, lease.validUntil);
  }

  /**
   * The DCS cannot be reached, but every member accepted this leader (failsafe mode): it stays
   * leader, its fence armed to stop PostgreSQL before `validUntil` unless the next round succeeds.
   */
  holdInFailsafe(validUntil: number): void {
    if (!this.held) return;
    const { validUntil: current, inFailsafe } = this.deps.leadership.getSnapshot().context;
    if (current > 0 && current < validUntil && !inFailsafe) {
      this.deps.events.recordCluster('failsafe.activated', 'DCS is not accessible; every member accepted this leader');
    }
    this.deps.leadership.send({ type: 'LOCK_REFRESHED', validUntil: Math.max(current, validUntil), failsafe: true });
    this.armFence();
  }

  /** The key is no longer ours (someone else's, gone, or unreadable). */
  lost(reason: string): void {
    // A release in flight is the reason the key is gone: it records itself as a release, not a loss.
    if (!this.held || this.releasing) return;
    this.deps.leadership.send({ type: 'LOCK_LOST', reason });
    this.deps.events.recordCluster('leader.lost', reason);
  }

  async release(reason: string): Promise<void> {
    this.releasing = true;
    // The release is dated when it was sent: a candidate may take the lock (and record it) before the answer comes back.
    const sentAt = this.deps.clock.now();
    const released = await this.deps.dcs.releaseLeader().catch(() => false);
    this.releasing = false;
    if (this.held) {
      this.deps.leadership.send({ type: 'LOCK_RELEASED', reason });
      this.deps.events.recordCluster('leader.released', reason, { deleted: released }, sentAt);
    }
    if (!this.deps.serverIsPrimary()) this.deps.pg.disarmFence();
  }

  /** Re-arms the fence while this node holds the lock; disarms it once it is not a primary. */
  keepFence(): void {
    if (this.held && this.lockValidUntil > 0) this.armFence();
    else if (!this.deps.serverIsPrimary()) this.deps.pg.disarmFence();
  }

  /** The lock is ours from now until `validUntil`: a recorded transition, then the fence. */
  private take(reason: string, validUntil: number): void {
    if (this.held) this.deps.leadership.send({ type: 'LOCK_REFRESHED', validUntil });
    else this.deps.leadership.send({ type: 'LOCK_ACQUIRED', reason, validUntil });
    this.armFence();
  }

  private armFence(): void {
    const { clock } = this.deps;
    const leftMs = this.lockValidUntil - fenceSafetyMarginMs(this.deps.ttlSeconds()) - clock.monotonic();
    this.deps.pg.armFence(clock.now() + leftMs, this.termForFence(), this.deps.watchdog?.());
  }

  /** What lets the fence end this term itself if the agent dies or freezes; none while paused or when it cannot reach the DCS. */
  private termForFence(): LeaderTerm | undefined {
    const settings = this.deps.fenceSettings();
    if (!settings.release_lease || this.deps.paused()) return undefined;
    const release = this.deps.dcs.termRelease();
    return release ? { release, graceMs: settings.agent_grace * 1000 } : undefined;
  }
}
