import { EtcdQuotaGuard, EtcdQuotaReached } from '../../src/events/etcd-quota-guard';

const MIB = 1024 * 1024;

describe("EtcdQuotaGuard: the event log's share of etcd", () => {
  let nowMs: number;
  let readings: Array<number | Error>;
  let reads: number;
  const guard = () =>
    new EtcdQuotaGuard(
      { quotaBytes: 2048 * MIB, share: 0.5 },
      async () => {
        reads++;
        const next = readings.shift()!;
        if (next instanceof Error) throw next;
        return next;
      },
      () => nowMs,
      30_000,
    );
  beforeEach(() => {
    nowMs = 0;
    reads = 0;
  });

  it('refuses appends past the share, naming both settings, and lets them through once etcd has room again', async () => {
    readings = [1100 * MIB, 900 * MIB];
    const quota = guard();
    await expect(quota.check()).rejects.toThrow(
      new EtcdQuotaReached(
        "etcd's database holds 1100.0 MiB, over 50% of its 2048.0 MiB quota (event_log.etcd_quota_share, event_log.etcd_quota_bytes): events wait here until etcd has room again",
      ),
    );
    nowMs += 29_000;
    await expect(quota.check()).rejects.toThrow(EtcdQuotaReached);
    expect(reads).toBe(1); // the recorder retries every second; etcd is asked again only every 30 s
    nowMs += 1_000;
    await expect(quota.check()).resolves.toBeUndefined();
    expect(reads).toBe(2);
  });

  it('never blocks events on a failed reading, and keeps the last one it had', async () => {
    readings = [new Error('permission denied'), 1500 * MIB, new Error('deadline exceeded')];
    const quota = guard();
    await expect(quota.check()).resolves.toBeUndefined();
    nowMs += 30_000;
    await expect(quota.check()).rejects.toThrow(EtcdQuotaReached);
    nowMs += 30_000;
    await expect(quota.check()).rejects.toThrow(EtcdQuotaReached);
    expect(reads).toBe(3);
  });
});
