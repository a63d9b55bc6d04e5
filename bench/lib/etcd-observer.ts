import { RecordedEvent } from '../../src/events/event';
import { now, sleep } from './util';

/** Read-only look at an agent cluster's etcd through its JSON gateway (v3). */

const b64 = (s: string) => Buffer.from(s).toString('base64');
const unb64 = (s: string | undefined) => (s === undefined ? '' : Buffer.from(s, 'base64').toString('utf8'));

async function call<T>(endpoint: string, path: string, body: unknown, timeoutMs = 1000): Promise<T> {
  const response = await fetch(`http://${endpoint}${path}`, {
    method: 'POST',
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!response.ok) throw new Error(`etcd ${path}: HTTP ${response.status}`);
  return (await response.json()) as T;
}

interface RawKv {
  key: string;
  value?: string;
  lease?: string;
}

export interface LeaderKey {
  holder: string;
  lease: string;
}

export function leaderKeyName(scope: string): string {
  return `/service/${scope}/leader`;
}

export async function readLeaderKey(endpoint: string, scope: string, timeoutMs = 1000): Promise<LeaderKey | null> {
  const response = await call<{ kvs?: RawKv[] }>(
    endpoint,
    '/v3/kv/range',
    { key: b64(leaderKeyName(scope)) },
    timeoutMs,
  );
  const kv = response.kvs?.[0];
  return kv ? { holder: unb64(kv.value), lease: kv.lease ?? '0' } : null;
}

/** Remaining TTL in whole seconds as etcd reports it (truncated), -1 when the lease is gone. */
export async function leaseTimeToLive(endpoint: string, lease: string, timeoutMs = 1000): Promise<number> {
  // proto3 JSON leaves zero values out: no TTL field means 0; a lease that is gone answers TTL -1.
  const response = await call<{ TTL?: string }>(endpoint, '/v3/lease/timetolive', { ID: lease }, timeoutMs);
  return Number(response.TTL ?? 0);
}

/** Every Stator event under `/stator-events/<scope>/` (the heads excluded). */
export async function readStatorEvents(endpoint: string, scope: string): Promise<StatorEvent[]> {
  const prefix = `/stator-events/${scope}/`;
  const end = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
  const response = await call<{ kvs?: RawKv[] }>(
    endpoint,
    '/v3/kv/range',
    { key: b64(prefix), range_end: b64(end) },
    5000,
  );
  const events: StatorEvent[] = [];
  for (const kv of response.kvs ?? []) {
    if (unb64(kv.key).startsWith(`${prefix}heads/`)) continue;
    try {
      const event = JSON.parse(unb64(kv.value)) as StatorEvent;
      if (typeof event.type === 'string' && typeof event.at === 'string') events.push(event);
    } catch {
      // not an event
    }
  }
  return events.sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
}

/** Stator's recorded events, as the event store holds them. */
export type StatorEvent = RecordedEvent;

export interface LeaseSample {
  t: number;
  /** Remaining TTL as reported (whole seconds, truncated), -1: lease gone, NaN: no answer. */
  ttl: number;
  /** Holder of the leader key at that moment ('' when there is none, null: no answer). */
  holder: string | null;
}

export interface LeaseAnalysis {
  /** Bounds of the moment the old lease expires (etcd's own clock, which is this machine's). */
  expiryLow: number;
  expiryHigh: number;
  /** Estimate: the middle of the bounds. */
  expiry: number;
  /** Between the last sample still showing the old holder and the first not showing it. */
  keyGoneLow: number;
  keyGoneHigh: number;
  /** First sample showing a new holder. */
  newHolder: string | null;
  newHolderSeen: number;
}

/**
 * Samples the old leader's lease (LeaseTimeToLive, served from the etcd leader's memory) and the
 * leader key every `intervalMs` from the kill until a new holder appears (bounded by `maxMs`).
 * etcd reports the remaining TTL truncated to whole seconds, so a sample at t reporting k ≥ 1
 * says the lease expires in [t + k, t + k + 1); the transitions between consecutive samples narrow
 * the expiry to the sampling interval, which gives when the lease expired independently of the
 * agent. The key itself disappears only when etcd's lessor revokes the expired lease, which it
 * checks every 500 ms.
 */
export class LeaseWatcher {
  readonly samples: LeaseSample[] = [];
  private stopped = false;
  private loop: Promise<void> | null = null;

  constructor(
    private readonly endpoint: string,
    private readonly scope: string,
    private readonly lease: string,
    private readonly oldHolder: string,
  ) {}

  start(maxMs: number, intervalMs = 20): void {
    this.loop = (async () => {
      const started = now();
      while (!this.stopped && now() - started < maxMs) {
        const t0 = now();
        const [ttl, key] = await Promise.all([
          leaseTimeToLive(this.endpoint, this.lease, 500).catch(() => NaN),
          readLeaderKey(this.endpoint, this.scope, 500).then(
            (k) => k?.holder ?? '',
            () => null,
          ),
        ]);
        this.samples.push({ t: (t0 + now()) / 2, ttl, holder: key });
        if (key && key !== this.oldHolder) break;
        const wait = intervalMs - (now() - t0);
        if (wait > 0) await sleep(wait);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  analyse(): LeaseAnalysis {
    let low = -Infinity;
    let high = Infinity;
    for (const s of this.samples) {
      if (!Number.isFinite(s.ttl)) continue;
      if (s.ttl >= 1) {
        low = Math.max(low, s.t + s.ttl * 1000);
        high = Math.min(high, s.t + (s.ttl + 1) * 1000);
      } else if (s.ttl === 0) {
        // truncation toward zero: remaining in (-1 s, 1 s)
        low = Math.max(low, s.t - 1000);
        high = Math.min(high, s.t + 1000);
      } else if (s.ttl === -1) {
        high = Math.min(high, s.t); // revoked: it had expired
      }
    }
    let keyGoneLow = NaN;
    let keyGoneHigh = NaN;
    let newHolder: string | null = null;
    let newHolderSeen = NaN;
    for (let i = 0; i < this.samples.length; i++) {
      const s = this.samples[i];
      if (s.holder === null) continue;
      if (s.holder !== this.oldHolder && Number.isNaN(keyGoneHigh)) {
        keyGoneHigh = s.t;
        const before = this.samples
          .slice(0, i)
          .reverse()
          .find((p) => p.holder === this.oldHolder);
        keyGoneLow = before ? before.t : NaN;
      }
      if (s.holder && s.holder !== this.oldHolder) {
        newHolder = s.holder;
        newHolderSeen = s.t;
        break;
      }
    }
    return {
      expiryLow: low,
      expiryHigh: high,
      expiry: (low + high) / 2,
      keyGoneLow,
      keyGoneHigh,
      newHolder,
      newHolderSeen,
    };
  }
}
