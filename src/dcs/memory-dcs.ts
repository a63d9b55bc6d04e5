import { defer, EMPTY, filter, map, Observable, startWith, Subject, takeUntil } from 'rxjs';
import { systemClock, TimerClock } from '../common/clock';
import { ClusterKeys, clusterPrefix, parseClusterView } from './cluster-view';
import {
  ClusterView,
  Dcs,
  DcsChange,
  DcsError,
  DynamicConfig,
  FailoverRequest,
  HistoryEntry,
  LeaderStatus,
  LockLease,
  MemberData,
  Revision,
  SyncState,
} from './dcs.port';

/** A key as the in-memory store keeps it (full key, etcd-like revisions as decimal strings). */
export interface MemoryEntry {
  key: string;
  value: string;
  createRevision: string;
  modRevision: string;
  /** Lease id, or null when the key has none. */
  lease: string | null;
}

/**
 * The shared store behind several MemoryDcs nodes: a key space with etcd-like revisions, leases
 * that expire by the given Clock, and a change feed. Leases are checked on every operation; with
 * a ManualClock, tests advance the clock and call `expireLeases()` to make expiry visible to
 * watchers at once. `setReachable(false)` makes every node's calls fail, like an unreachable etcd.
 */
export class MemoryDcsBackend {
  private revision = 0;
  private nextLeaseId = 1;
  private readonly entries = new Map<string, MemoryEntry>();
  private readonly leases = new Map<string, { ttlMs: number; expiresAt: number }>();
  private readonly changeFeed = new Subject<{ key: string; type: 'put' | 'delete' }>();
  private reachable = true;

  constructor(readonly clock: TimerClock = systemClock) {}

  /** Current store revision (last write). */
  get currentRevision(): string {
    return String(this.revision);
  }

  /** Full keys as they change, after the change is applied. */
  get changes(): Observable<{ key: string; type: 'put' | 'delete' }> {
    return this.changeFeed.asObservable();
  }

  /** While false, every MemoryDcs call rejects with a DcsError. */
  setReachable(reachable: boolean): void {
    this.reachable = reachable;
  }

  /** Throws when unreachable; otherwise drops expired leases. Every operation starts here. */
  checkAvailable(operation: string): void {
    if (!this.reachable) throw new DcsError(`${operation}: DCS unreachable`);
    this.expireLeases();
  }

  /** Deletes every lease whose TTL has run out on the clock, with the keys attached to it. */
  expireLeases(): void {
    const now = this.clock.monotonic();
    for (const [id, lease] of this.leases) {
      if (lease.expiresAt <= now) this.revokeLease(id);
    }
  }

  get(key: string): MemoryEntry | null {
    return this.entries.get(key) ?? null;
  }

  /** Every key starting with `prefix`, in key order. */
  range(prefix: string): MemoryEntry[] {
    return [...this.entries.values()]
      .filter((entry) => entry.key.startsWith(prefix))
      .sort((a, b) => (a.key < b.key ? -1 : 1));
  }

  put(key: string, value: string, lease: string | null = null): MemoryEntry {
    if (lease !== null && !this.leases.has(lease)) throw new DcsError(`put ${key}: lease ${lease} not found`);
    const revision = String(++this.revision);
    const entry = {
      key,
      value,
      createRevision: this.entries.get(key)?.createRevision ?? revision,
      modRevision: revision,
      lease,
    };
    this.entries.set(key, entry);
    this.changeFeed.next({ key, type: 'put' });
    return entry;
  }

  delete(key: string): boolean {
    if (!this.entries.delete(key)) return false;
    this.revision++;
    this.changeFeed.next({ key, type: 'delete' });
    return true;
  }

  grantLease(ttlSeconds: number): string {
    const id = String(this.nextLeaseId++);
    this.leases.set(id, { ttlMs: ttlSeconds * 1000, expiresAt: this.clock.monotonic() + ttlSeconds * 1000 });
    return id;
  }

  /** Restarts the lease's TTL; false when the lease no longer exists. */
  keepAliveLease(id: string): boolean {
    const lease = this.leases.get(id);
    if (!lease) return false;
    lease.expiresAt = this.clock.monotonic() + lease.ttlMs;
    return true;
  }

  hasLease(id: string): boolean {
    return this.leases.has(id);
  }

  revokeLease(id: string): void {
    if (!this.leases.delete(id)) return;
    for (const entry of [...this.entries.values()]) {
      if (entry.lease === id) this.delete(entry.key);
    }
  }
}

export interface MemoryDcsOptions {
  namespace: string;
  scope: string;
  name: string;
  ttlSeconds: number;
}

/**
 * One node's view of a MemoryDcsBackend, with the same semantics as EtcdDcs: one lease per node
 * attached to `leader` and `members/<name>`, create-if-absent acquire, refresh that never
 * re-creates a missing leader key, CAS on mod revision. Calls are atomic (each runs in one tick)
 * and fail at once with a DcsError while the backend is unreachable.
 */
export class MemoryDcs implements Dcs {
  private readonly prefix: string;
  private ttlSeconds: number;
  private lease: { id: string; refreshedAt: number } | null = null;
  private lastMemberWrite: { value: string; leaseId: string } | null = null;
  private closed = false;
  private readonly closing = new Subject<void>();

  constructor(
    private readonly backend: MemoryDcsBackend,
    private readonly options: MemoryDcsOptions,
  ) {
    this.prefix = clusterPrefix(options.namespace, options.scope);
    this.ttlSeconds = options.ttlSeconds;
  }

  async read(): Promise<ClusterView> {
    this.ready('read cluster');
    const keys = this.backend
      .range(this.prefix)
      .map((entry) => ({ ...entry, key: entry.key.slice(this.prefix.length) }));
    return parseClusterView(keys, this.backend.currentRevision);
  }

  /** In memory a read costs nothing and is never stale. */
  readCached(): Promise<ClusterView> {
    return this.read();
  }

  /** Emits a resync on subscription (the feed is live from then on), then every change under the prefix. */
  changes(): Observable<DcsChange> {
    if (this.closed) return EMPTY;
    return defer(() =>
      this.backend.changes.pipe(
        filter((change) => change.key.startsWith(this.prefix)),
        map((change): DcsChange => ({ key: change.key.slice(this.prefix.length), type: change.type })),
        startWith<DcsChange>({ key: null, type: 'resync' }),
        takeUntil(this.closing),
      ),
    );
  }

  async acquireLeader(): Promise<LockLease | null> {
    this.ready('acquire leader lock');
    const { leaseId, validUntil } = this.keepLeaseAlive();
    const holder = this.backend.get(this.key(ClusterKeys.leader));
    if (!holder) {
      this.backend.put(this.key(ClusterKeys.leader), this.options.name, leaseId);
      return { validUntil };
    }
    return holder.value === this.options.name && holder.lease === leaseId ? { validUntil } : null;
  }

  /** Nothing to start ahead: the in-memory store answers at once. */
  startLeaderRefresh(): void {}

  async refreshLeader(): Promise<LockLease | null> {
    this.ready('refresh leader lock');
    const { leaseId, validUntil } = this.keepLeaseAlive();
    const holder = this.backend.get(this.key(ClusterKeys.leader));
    if (holder?.value !== this.options.name) return null;
    if (holder.lease !== leaseId) this.backend.put(holder.key, this.options.name, leaseId);
    return { validUntil };
  }

  async releaseLeader(): Promise<boolean> {
    this.ready('release leader lock');
    const holder = this.backend.get(this.key(ClusterKeys.leader));
    return holder?.value === this.options.name && this.backend.delete(holder.key);
  }

  async forceLeader(): Promise<LockLease> {
    this.ready('write leader key');
    const { leaseId, validUntil } = this.keepLeaseAlive();
    this.backend.put(this.key(ClusterKeys.leader), this.options.name, leaseId);
    return { validUntil };
  }

  /** An in-memory store lives in the agent's process: no fence can reach it. */
  termRelease(): null {
    return null;
  }

  /** Keepalive when the last one is older than ttl/3 or renewLease (as EtcdDcs); skips an identical write on the same lease. */
  async touchMember(data: MemberData, options: { renewLease?: boolean } = {}): Promise<void> {
    this.ready('write member key');
    const value = JSON.stringify(data);
    const fresh =
      !options.renewLease &&
      this.lease !== null &&
      this.backend.hasLease(this.lease.id) &&
      this.backend.clock.monotonic() - this.lease.refreshedAt < (this.ttlSeconds * 1000) / 3;
    const leaseId = fresh && this.lease ? this.lease.id : this.keepLeaseAlive().leaseId;
    if (this.lastMemberWrite?.value === value && this.lastMemberWrite.leaseId === leaseId) return;
    this.backend.put(this.key(ClusterKeys.member(this.options.name)), value, leaseId);
    this.lastMemberWrite = { value, leaseId };
  }

  async initialize(value: string, create: boolean): Promise<boolean> {
    return this.write('write initialize key', ClusterKeys.initialize, value, create ? 'absent' : undefined);
  }

  async cancelInitialization(): Promise<void> {
    this.ready('delete initialize key');
    this.backend.delete(this.key(ClusterKeys.initialize));
  }

  async setConfig(config: DynamicConfig, expectedRevision?: Revision): Promise<boolean> {
    return this.write('write config', ClusterKeys.config, JSON.stringify(config), expectedRevision);
  }

  async setFailover(request: FailoverRequest, expectedRevision?: Revision): Promise<boolean> {
    return this.write('write failover key', ClusterKeys.failover, JSON.stringify(request), expectedRevision);
  }

  async setHistory(history: HistoryEntry[]): Promise<void> {
    await this.write('write history', ClusterKeys.history, JSON.stringify(history));
  }

  async setSync(state: SyncState | null, expectedRevision: Revision): Promise<Revision | null> {
    this.ready(state ? 'write sync key' : 'delete sync key');
    const key = this.key(ClusterKeys.sync);
    const current = this.backend.get(key);
    const leaderHolds = this.backend.get(this.key(ClusterKeys.leader))?.value === this.options.name;
    const revisionMatches =
      expectedRevision === 'absent' ? current === null : current?.modRevision === expectedRevision;
    if (!leaderHolds || !revisionMatches) return null;
    if (state) return this.backend.put(key, JSON.stringify(state)).modRevision;
    if (current) this.backend.delete(key);
    return 'absent';
  }

  async setFailsafe(members: Record<string, string> | null): Promise<void> {
    if (members) {
      await this.write('write failsafe key', ClusterKeys.failsafe, JSON.stringify(members));
      return;
    }
    this.ready('delete failsafe key');
    this.backend.delete(this.key(ClusterKeys.failsafe));
  }

  async setStatus(status: LeaderStatus): Promise<void> {
    await this.write('write status', ClusterKeys.status, JSON.stringify(status));
  }

  /** Grants a new lease with the new TTL; keys move onto it with the next refresh and touch. */
  /** The in-memory store answers at once or not at all: no retries to bound. */
  async setTtl(ttlSeconds: number): Promise<void> {
    this.ready('grant lease');
    if (ttlSeconds === this.ttlSeconds) return;
    this.ttlSeconds = ttlSeconds;
    this.lease = { id: this.backend.grantLease(ttlSeconds), refreshedAt: this.backend.clock.monotonic() };
  }

  /** Calls answer at once or never: there is no deadline to change. */
  setRetryTimeout(): void {}

  /** Revokes the lease (its keys go with it) unless `keepLease`, and completes change subscribers. */
  async close({ keepLease = false }: { keepLease?: boolean } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.closing.next();
    if (this.lease && !keepLease) this.backend.revokeLease(this.lease.id);
    this.lease = null;
  }

  private key(relative: string): string {
    return this.prefix + relative;
  }

  private ready(operation: string): void {
    if (this.closed) throw new DcsError(`${operation}: the DCS client is closed`);
    this.backend.checkAvailable(operation);
  }

  /** Keepalive of the own lease, or a new grant when it was lost; validUntil counts from now. */
  private keepLeaseAlive(): { leaseId: string; validUntil: number } {
    const now = this.backend.clock.monotonic();
    if (!this.lease || !this.backend.keepAliveLease(this.lease.id)) {
      this.lease = { id: this.backend.grantLease(this.ttlSeconds), refreshedAt: now };
    }
    this.lease.refreshedAt = now;
    return { leaseId: this.lease.id, validUntil: now + this.ttlSeconds * 1000 };
  }

  private async write(operation: string, key: string, value: string, expected?: Revision): Promise<boolean> {
    this.ready(operation);
    const current = this.backend.get(this.key(key));
    const allowed =
      expected === undefined || (expected === 'absent' ? current === null : current?.modRevision === expected);
    if (allowed) this.backend.put(this.key(key), value);
    return allowed;
  }
}
