import { EMPTY, Observable, Subject } from 'rxjs';
import { TimerClock } from '../common/clock';
import type { TermRelease } from '../common/term-release';
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
import { EtcdClient, revisionIs, TxnCompare } from './etcd/etcd-client';
import { EtcdConnection, leaseReleaseThroughGateway } from './etcd/etcd-transport';
import { ClusterWatch } from './etcd/cluster-watch';
import { currentDcsBudget } from './dcs-budget';
import { OwnLeaseKeeper } from './etcd/own-lease';
import { cycleAllowanceMs, RemainingMs, retryTransient } from './etcd/etcd-retry';

/** etcd's endpoints, TLS and user (`hosts` are `host:port`), then the cluster's keys and timing. */
export interface EtcdDcsOptions extends EtcdConnection {
  /** Patroni's namespace, e.g. `/service`. */
  namespace: string;
  scope: string;
  /** This node's member name. */
  name: string;
  /** Lease TTL in seconds (`ttl`). */
  ttlSeconds: number;
  /** Overall deadline of every call, retries included (`retry_timeout` in ms). */
  retryTimeoutMs: number;
  clock: TimerClock;
  /** How many ttls a read confirms the watch's cache for (default CACHE_CONFIRM_TTLS). */
  cacheConfirmTtls?: number;
}

/**
 * A read confirms the watch's cache at least every this many ttls (readCached). It is the backstop for
 * a watch whose connection died unnoticed (a failed request, etcd's restart or its loss of quorum end
 * the watch at once); each confirming read of a cluster's keys costs etcd a range of a few KiB, so the
 * backstop is rare: every 5 minutes at ttl 30.
 */
export const CACHE_CONFIRM_TTLS = 10;

/** A call the HA cycle cannot do without (the read, the leader lock, the lease): tried with whatever time is left. */
const ESSENTIAL = { essential: true };

/**
 * The Dcs port on etcd v3 (through the gRPC-JSON gateway), in Patroni's key layout and lease
 * model (reference-behavior 2.3): one lease per node with TTL = ttl, granted lazily and re-granted
 * when lost, attached to `leader` and `members/<name>`; CAS through txn compares.
 *
 * Every call retries transient failures (unreachable host, timeout, no etcd leader) with a delay
 * of 100 ms doubling to at most 1 s, and rejects with a DcsError once `retryTimeoutMs` has passed
 * since the call started, or once its HA cycle's DcsBudget is spent. Reads are linearizable, so a
 * partitioned etcd member cannot serve a stale view.
 */
export class EtcdDcs implements Dcs {
  private readonly client: EtcdClient;
  private readonly prefix: string;
  private readonly leaderKey: string;
  private readonly memberKey: string;
  private readonly lease: OwnLeaseKeeper;
  /** The member value and lease of the last successful member write, to skip identical writes. */
  private lastMemberWrite: { value: string; leaseId: string } | null = null;
  /** The leader key as the last read found it, until the next refresh consumes it (see refreshLeader). */
  private leaderSeen: { value: string; lease: string; at: number } | null = null;
  /**
   * Set by a release until this node takes the key again: no sighting stands for the key then. The watch's cache
   * (and a read racing the delete) can still show our name after the release; a refresh trusting it would say the
   * lock is still held by the node that just gave it up.
   */
  private released = false;
  /** `retry_timeout` in ms: from the configuration file at start, then from `/config` (setRetryTimeout). */
  private retryTimeoutMs!: number;
  private closed = false;
  private readonly closing = new Subject<void>();
  private readonly watch: ClusterWatch;

  constructor(private readonly options: EtcdDcsOptions) {
    this.client = new EtcdClient(options);
    this.prefix = clusterPrefix(options.namespace, options.scope);
    this.leaderKey = this.prefix + ClusterKeys.leader;
    this.memberKey = this.prefix + ClusterKeys.member(options.name);
    this.lease = new OwnLeaseKeeper(this.client, options.clock, options.ttlSeconds);
    this.setRetryTimeout(options.retryTimeoutMs);
    // Closing ends every subscription, and with them the watch.
    this.watch = new ClusterWatch(this.client, this.prefix, options.retryTimeoutMs, options.clock, this.closing);
  }

  /** One linearizable range over the cluster prefix. */
  async read(): Promise<ClusterView> {
    const result = await this.withRetry(
      'read cluster',
      (remaining) => this.client.range(this.prefix, { prefix: true }, remaining()),
      ESSENTIAL,
    );
    const leader = result.kvs.find((kv) => kv.key === this.leaderKey);
    this.leaderSeen = leader ? { value: leader.value, lease: leader.lease, at: this.options.clock.monotonic() } : null;
    this.watch.confirmed(result.kvs, result.revision);
    const keys = result.kvs.map((kv) => ({ ...kv, key: kv.key.slice(this.prefix.length) }));
    return parseClusterView(keys, result.revision);
  }

  /**
   * The watch's cache while it can stand in for a read (ClusterWatch): live, and confirmed by a read
   * less than CACHE_CONFIRM_TTLS ttls ago (`cacheConfirmTtls`). Otherwise, or while nobody watches, a
   * read. An idle cycle then sends no read, as the reference's does (its etcd3 reads the cluster from
   * its watch cache alone); the confirmation bounds how long a watch that died unnoticed can hide a
   * change: two small ranges when the watch is live (ClusterWatch.confirmUnchanged), a read when
   * they find a difference. The leader key found there stands for a read's in refreshLeader: a delete
   * of it reaches a live watch.
   */
  async readCached(): Promise<ClusterView> {
    const maxAgeMs = (this.options.cacheConfirmTtls ?? CACHE_CONFIRM_TTLS) * this.lease.ttlSeconds * 1000;
    let trusted = this.watch.trustedView(maxAgeMs);
    if (
      !trusted &&
      (await this.withRetry('confirm cluster cache', (left) => this.watch.confirmUnchanged(left), ESSENTIAL))
    )
      trusted = this.watch.trustedView(maxAgeMs);
    if (!trusted) return this.read();
    const { leader } = trusted;
    this.leaderSeen = leader ? { value: leader.value, lease: leader.lease, at: this.options.clock.monotonic() } : null;
    return trusted.view;
  }

  /**
   * One prefix watch shared by all subscribers. Once the watch is live, and again after every
   * re-establishment that may have missed changes (etcd restart, compaction), it emits `{ key:
   * null, type: 'resync' }`: re-read everything. A watch ended by a silent connection resumes
   * where it was (ClusterWatch); a frozen etcd is noticed by the HA loop's own requests.
   */
  changes(): Observable<DcsChange> {
    if (this.closed) return EMPTY;
    return this.watch.changes();
  }

  /**
   * Keepalive (or grant) of the own lease, then `txn(CREATE(leader)==0 → put(leader, name, lease))`.
   * Resolves null when another node holds the key. A retry after an ambiguous failure recognises
   * its own earlier success (same name, same lease).
   */
  async acquireLeader(): Promise<LockLease | null> {
    return this.withRetry(
      'acquire leader lock',
      async (remaining) => {
        const lease = await this.lease.keepAlive(remaining);
        const result = await this.client.txn(
          {
            compare: [{ key: this.leaderKey, target: 'CREATE', createRevision: '0' }],
            success: [{ put: { key: this.leaderKey, value: this.options.name, lease: lease.id } }],
            failure: [{ range: { key: this.leaderKey } }],
          },
          remaining(),
        );
        const holder = result.responses[0]?.kvs[0];
        const ours = result.succeeded || (holder?.value === this.options.name && holder.lease === lease.id);
        if (!ours) return null;
        this.released = false;
        return this.lease.lockLease(lease);
      },
      ESSENTIAL,
    );
  }

  /** The keepalive of this cycle's refresh, sent now; refreshLeader takes its answer (Dcs.startLeaderRefresh). */
  startLeaderRefresh(): void {
    const cycle = currentDcsBudget();
    if (cycle && !this.closed) this.lease.keepAliveEarly(cycle, Math.min(this.retryTimeoutMs, cycle.remainingMs()));
  }

  /**
   * A forced keepalive; when `leader` already holds our name on our lease that is all. When it
   * holds our name on another lease (the lease was re-granted), `txn(VALUE==name → put with lease)`
   * moves it onto ours. Null when the key holds another name or is absent: it is not re-created
   * here, the HA loop decides whether to acquire.
   *
   * When the read just before (the HA cycle's own, or the live watch's cache readCached answered
   * from) found the key with our name on the lease the keepalive just renewed, the key is still ours:
   * only a delete or the lease's expiry could take it, and the lease is alive. The compare is then
   * skipped, as the reference does; an idle leader sends one request a cycle, its keepalive. A
   * sighting older than a third of the TTL is not trusted.
   */
  async refreshLeader(): Promise<LockLease | null> {
    const cycle = currentDcsBudget();
    const recent =
      this.leaderSeen && this.options.clock.monotonic() - this.leaderSeen.at < (this.lease.ttlSeconds * 1000) / 3;
    const seen = recent && !this.released ? this.leaderSeen : null;
    this.leaderSeen = null;
    return this.withRetry(
      'refresh leader lock',
      async (remaining) => {
        const lease = (await this.lease.takeEarly(cycle)) ?? (await this.lease.keepAlive(remaining));
        if (seen?.value === this.options.name && seen.lease === lease.id) return this.lease.lockLease(lease);
        const ownsKey = await this.client.txn(
          {
            compare: [this.leaderHolds(), { key: this.leaderKey, target: 'LEASE', lease: lease.id }],
            failure: [{ range: { key: this.leaderKey } }],
          },
          remaining(),
        );
        if (ownsKey.succeeded) return this.lease.lockLease(lease);
        if (ownsKey.responses[0]?.kvs[0]?.value !== this.options.name) return null;
        const moved = await this.client.txn(
          {
            compare: [this.leaderHolds()],
            success: [{ put: { key: this.leaderKey, value: this.options.name, lease: lease.id } }],
          },
          remaining(),
        );
        return moved.succeeded ? this.lease.lockLease(lease) : null;
      },
      ESSENTIAL,
    );
  }

  /** `txn(VALUE(leader)==name → delete)`. */
  async releaseLeader(): Promise<boolean> {
    this.released = true;
    this.leaderSeen = null;
    return this.withRetry(
      'release leader lock',
      async (remaining) => {
        const result = await this.client.txn(
          { compare: [this.leaderHolds()], success: [{ deleteRange: { key: this.leaderKey } }] },
          remaining(),
        );
        return result.succeeded;
      },
      ESSENTIAL,
    );
  }

  async forceLeader(): Promise<LockLease> {
    return this.withRetry(
      'write leader key',
      async (remaining) => {
        const lease = await this.lease.keepAlive(remaining);
        await this.client.put(this.leaderKey, this.options.name, { lease: lease.id }, remaining());
        this.released = false;
        return this.lease.lockLease(lease);
      },
      ESSENTIAL,
    );
  }

  /**
   * Writes the member key on the own lease. Sends a keepalive first when the last one is older
   * than ttl/3 (the lease must outlive the HA loop's period) or `renewLease` asks for one, and skips
   * the write when the value and lease equal the last successful write.
   */
  async touchMember(data: MemberData, options: { renewLease?: boolean } = {}): Promise<void> {
    const value = JSON.stringify(data);
    await this.withRetry('write member key', async (remaining) => {
      const held = this.lease.current;
      const lease =
        held &&
        !options.renewLease &&
        this.options.clock.monotonic() - held.refreshSentAt < (this.lease.ttlSeconds * 1000) / 3
          ? held
          : await this.lease.keepAlive(remaining);
      if (this.lastMemberWrite?.value === value && this.lastMemberWrite.leaseId === lease.id) return;
      await this.client.put(this.memberKey, value, { lease: lease.id }, remaining());
      this.lastMemberWrite = { value, leaseId: lease.id };
    });
  }

  async initialize(value: string, create: boolean): Promise<boolean> {
    return this.write('write initialize key', ClusterKeys.initialize, value, create ? 'absent' : undefined);
  }

  async cancelInitialization(): Promise<void> {
    await this.withRetry('delete initialize key', (remaining) =>
      this.client.deleteRange(this.prefix + ClusterKeys.initialize, {}, remaining()),
    );
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
    const key = this.prefix + ClusterKeys.sync;
    return this.withRetry(state ? 'write sync key' : 'delete sync key', async (remaining) => {
      const result = await this.client.txn(
        {
          compare: [this.leaderHolds(), revisionIs(key, expectedRevision)],
          success: [state ? { put: { key, value: JSON.stringify(state) } } : { deleteRange: { key } }],
        },
        remaining(),
      );
      if (!result.succeeded) return null;
      return state ? result.revision : 'absent';
    });
  }

  async setFailsafe(members: Record<string, string> | null): Promise<void> {
    if (members) await this.write('write failsafe key', ClusterKeys.failsafe, JSON.stringify(members));
    else
      await this.withRetry('delete failsafe key', (remaining) =>
        this.client.deleteRange(this.prefix + ClusterKeys.failsafe, {}, remaining()),
      );
  }

  async setStatus(status: LeaderStatus): Promise<void> {
    await this.write('write status', ClusterKeys.status, JSON.stringify(status));
  }

  /**
   * Grants a new lease with the new TTL (no-op when unchanged). The old lease is not revoked, so
   * `leader` and the member key stay until the next refresh and touch move them onto the new one.
   */
  async setTtl(ttlSeconds: number): Promise<void> {
    if (!this.lease.changeTtl(ttlSeconds)) return;
    await this.withRetry('grant lease', (remaining) => this.lease.grant(remaining()), ESSENTIAL);
  }

  /** The deadline of every later call, e.g. after `retry_timeout` changed in `/config`. */
  setRetryTimeout(retryTimeoutMs: number): void {
    this.retryTimeoutMs = retryTimeoutMs;
    // A cycle's first call may wait the whole retry_timeout: one given less than half of it was cut short by its cycle.
    this.client.noAnswerCountsFromMs = retryTimeoutMs / 2;
  }

  /**
   * Revokes the lease (one attempt within retryTimeout; if that fails the lease expires by itself),
   * completes change subscribers and aborts everything in flight.
   */
  async close({ keepLease = false }: { keepLease?: boolean } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.closing.next();
    const lease = this.lease.takeForClose();
    if (lease && !keepLease) await this.client.leaseRevoke(lease.id, this.retryTimeoutMs).catch(() => undefined);
    this.client.close();
  }

  private leaderHolds(): TxnCompare {
    return { key: this.leaderKey, target: 'VALUE', value: this.options.name };
  }

  termRelease(): TermRelease | null {
    const lease = this.lease.current;
    return lease ? leaseReleaseThroughGateway(this.options, lease.id) : null;
  }

  /** Create-only (`'absent'`), compare-and-set on mod revision, or plain put (no expectation). */
  private async write(operation: string, key: string, value: string, expected?: Revision): Promise<boolean> {
    const fullKey = this.prefix + key;
    return this.withRetry(operation, async (remaining) => {
      if (expected === undefined) {
        await this.client.put(fullKey, value, {}, remaining());
        return true;
      }
      const result = await this.client.txn(
        { compare: [revisionIs(fullKey, expected)], success: [{ put: { key: fullKey, value } }] },
        remaining(),
      );
      return result.succeeded;
    });
  }

  private readonly retryHooks = {
    leaseLost: () => this.lease.forget(), // expired or revoked under us: re-grant on the next attempt
    closed: () => this.closed,
  };

  /**
   * Runs `attempt` until it succeeds, a non-transient error occurs, or retryTimeoutMs has passed
   * since the call started. `remaining()` gives each request the time left of that deadline. Within
   * an HA cycle the deadline is also bounded by what the cycle's DcsBudget has left: the cycle's
   * calls share one retry_timeout, and a call is not sent at all once that is spent.
   */
  private async withRetry<T>(
    operation: string,
    attempt: (remaining: RemainingMs) => Promise<T>,
    { essential }: { essential?: boolean } = {},
  ): Promise<T> {
    if (this.closed) throw new DcsError(`${operation}: the DCS client is closed`);
    const budget = currentDcsBudget();
    if (!budget) return retryTransient(this.retryTimeoutMs, operation, attempt, this.retryHooks);
    const allowedMs = cycleAllowanceMs(operation, budget, this.retryTimeoutMs, this.client.lastAnswerMs, essential);
    return budget.charge(() => retryTransient(allowedMs, operation, attempt, this.retryHooks));
  }
}
