import { TimerClock } from '../../common/clock';
import { LockLease } from '../dcs.port';
import { EtcdClient } from './etcd-client';
import { RemainingMs } from './etcd-retry';
import { withinDeadline } from './etcd-types';

/** The lease this node attaches to `leader` and `members/<name>`. */
export interface OwnLease {
  id: string;
  /** clock.monotonic() just before the grant or the last keepalive was sent. */
  refreshSentAt: number;
}

/**
 * One node's etcd lease, as Patroni keeps it: TTL = ttl, granted lazily, kept alive by the calls that write under it,
 * and granted again when lost. Concurrent callers share one grant, so a node never holds two leases for one TTL.
 */
export class OwnLeaseKeeper {
  private lease: OwnLease | null = null;
  /** A grant in flight, shared so that concurrent calls do not create two leases. */
  private pendingGrant: { ttlSeconds: number; lease: Promise<OwnLease> } | null = null;
  /** A keepalive sent ahead of the refresh that will use it, and the HA cycle it was sent for (keepAliveEarly). */
  private early: { forCycle: object; lease: Promise<OwnLease | null> } | null = null;

  constructor(
    private readonly client: EtcdClient,
    private readonly clock: TimerClock,
    private ttl: number,
  ) {}

  get ttlSeconds(): number {
    return this.ttl;
  }

  /** The lease as last granted or refreshed, null when there is none (not yet granted, lost, or handed over). */
  get current(): OwnLease | null {
    return this.lease;
  }

  /** Expired or revoked under us: the next call grants a new one. */
  forget(): void {
    this.lease = null;
  }

  /** The lease, no longer kept here (close revokes it or leaves it to expire). */
  takeForClose(): OwnLease | null {
    const lease = this.lease;
    this.lease = null;
    return lease;
  }

  /** A new TTL: false when unchanged; otherwise the next call grants a lease with it. */
  changeTtl(ttlSeconds: number): boolean {
    if (ttlSeconds === this.ttl) return false;
    this.ttl = ttlSeconds;
    this.lease = null;
    return true;
  }

  /** Until when a lock held under `lease` is ours: a ttl after the refresh was sent. */
  lockLease(lease: OwnLease): LockLease {
    return { validUntil: lease.refreshSentAt + this.ttl * 1000 };
  }

  /** A keepalive of the own lease; grants a new one when there is none or it was lost. */
  async keepAlive(remaining: RemainingMs): Promise<OwnLease> {
    const lease = this.lease;
    if (!lease) return this.grant(remaining());
    const refreshSentAt = this.clock.monotonic();
    const ttlLeft = await this.client.leaseKeepAlive(lease.id, remaining());
    if (ttlLeft <= 0) {
      if (this.lease?.id === lease.id) this.lease = null;
      return this.grant(remaining());
    }
    const refreshed = { id: lease.id, refreshSentAt };
    if (this.lease?.id === lease.id) this.lease = refreshed;
    return refreshed;
  }

  /**
   * Sends the keepalive of a refresh that `forCycle` will make later, now: the refresh then waits only for what is
   * left of its answer (takeEarly). Nothing is sent without a lease: the refresh grants one itself.
   */
  keepAliveEarly(forCycle: object, timeoutMs: number): void {
    if (!this.lease) return;
    this.early = { forCycle, lease: this.keepAlive(() => timeoutMs).catch(() => null) };
  }

  /** The answer of the keepalive sent early for `cycle`, once; null when none was sent for it or it failed. */
  async takeEarly(cycle: object | undefined): Promise<OwnLease | null> {
    const early = this.early;
    if (!early || !cycle || early.forCycle !== cycle) return null;
    this.early = null;
    return early.lease;
  }

  /**
   * Grants a lease with the current TTL, or joins a grant already in flight. A joining caller
   * still waits no longer than its own `timeoutMs`: the shared request runs on the deadline of the
   * call that started it, which may end later.
   */
  grant(timeoutMs: number): Promise<OwnLease> {
    const ttlSeconds = this.ttl;
    if (this.pendingGrant?.ttlSeconds === ttlSeconds)
      return withinDeadline(this.pendingGrant.lease, timeoutMs, 'lease grant');
    const refreshSentAt = this.clock.monotonic();
    const lease = this.client.leaseGrant(ttlSeconds, timeoutMs).then(({ id }) => {
      const granted = { id, refreshSentAt };
      if (ttlSeconds === this.ttl) this.lease = granted;
      return granted;
    });
    const pending = { ttlSeconds, lease };
    this.pendingGrant = pending;
    const clear = () => {
      if (this.pendingGrant === pending) this.pendingGrant = null;
    };
    lease.then(clear, clear);
    return lease;
  }
}
