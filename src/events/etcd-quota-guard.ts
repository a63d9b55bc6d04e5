import { performance } from 'node:perf_hooks';

/** An append refused because etcd's database is past the share of its quota the event log may push it to. */
export class EtcdQuotaReached extends Error {
  override readonly name = 'EtcdQuotaReached';
}

export interface EtcdQuotaLimit {
  /** The `--quota-backend-bytes` etcd runs with (event_log.etcd_quota_bytes). */
  quotaBytes: number;
  /** The share of it past which no event is appended (event_log.etcd_quota_share). */
  share: number;
}

/** How often etcd's database size is read again, at most: an append in between uses the last reading. */
const READING_INTERVAL_MS = 30_000;
const MIB = 1024 * 1024;

/**
 * Keeps the event log from filling the etcd that many clusters' leader keys live in: past the
 * limit, `check()` rejects and the recorder keeps its events queued (and retries) until etcd has
 * room again (retention, compaction and defragmentation). The reading is etcd's database size in
 * use (what new writes need room beside); a failed reading never blocks events.
 */
export class EtcdQuotaGuard {
  private readAt = -Infinity;
  private dbBytes: number | null = null;

  constructor(
    private readonly limit: EtcdQuotaLimit,
    private readonly readDbBytes: () => Promise<number>,
    private readonly now: () => number = () => performance.now(),
    private readonly intervalMs = READING_INTERVAL_MS,
  ) {}

  async check(): Promise<void> {
    if (this.now() - this.readAt >= this.intervalMs) {
      this.readAt = this.now();
      this.dbBytes = await this.readDbBytes().catch(() => this.dbBytes);
    }
    const limitBytes = this.limit.quotaBytes * this.limit.share;
    if (this.dbBytes !== null && this.dbBytes > limitBytes) {
      throw new EtcdQuotaReached(
        `etcd's database holds ${mib(this.dbBytes)} MiB, over ${Math.round(this.limit.share * 100)}% of its ${mib(this.limit.quotaBytes)} MiB quota ` +
          '(event_log.etcd_quota_share, event_log.etcd_quota_bytes): events wait here until etcd has room again',
      );
    }
  }
}

function mib(bytes: number): string {
  return (bytes / MIB).toFixed(1);
}
