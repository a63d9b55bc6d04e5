import { Client } from 'pg';
import { pgClient, query } from './sql';
import { now, sleep } from './util';

export const WRITE_INTERVAL_MS = 50;

/** A run of failed attempts with the same error (numbers masked), and the slowest attempt's own words (its timings). */
export interface FailureSpan {
  fromMs: number;
  toMs: number;
  count: number;
  error: string;
  slowest: string;
}

export interface GapReport {
  /** Longest interval between two consecutive acknowledged inserts after `from`, ms. */
  gapMs: number;
  /** When that gap started, relative to `from` (the event), ms. */
  gapStartMs: number;
  /** First acknowledged insert after `from`, relative to it, ms (NaN: none). */
  firstAfterMs: number;
  failedAttempts: number;
  errors: string[];
}

/**
 * A client that inserts a row every 50 ms on a persistent connection, emulating libpq's
 * `target_session_attrs=read-write` over every node: after any failure it drops the connection
 * and, at the next tick, tries each node's PostgreSQL port in turn until one accepts the
 * connection and reports `transaction_read_only = off`. Each acknowledged insert's time is kept.
 * Connection and statement timeouts are 1 s. The loop is bounded by `maxMs` and by stop().
 */
export class WriteProbe {
  readonly acks: number[] = [];
  /** The row id of each acknowledged insert (same index as `acks`): what the final primary must still hold. */
  readonly ackedIds: number[] = [];
  private readonly failures: { at: number; error: string }[] = [];
  private client: Client | null = null;
  private stopped = false;
  private loop: Promise<void> | null = null;
  private preferred = 0;
  /** PostgreSQL connections opened (a backend forked and a scram exchange each): the client's own load on the machine. */
  readonly opened = { connections: 0 };

  /**
   * `maxReconnectDelayMs`: after failed connection rounds, wait 50 ms, then twice as long each time up to this, as
   * a client's pool would; 0 (the default) tries again at every 50 ms tick. Without it, a cluster whose primary is
   * gone opens up to 60 connections a second (three nodes, 20 rounds).
   */
  constructor(
    private readonly ports: number[],
    private readonly maxReconnectDelayMs = 0,
  ) {}

  start(maxMs: number): void {
    this.loop = this.run(maxMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    await this.client?.end().catch(() => undefined);
    this.client = null;
  }

  /** Waits until an insert has been acknowledged after `since` (bounded). */
  async waitForAckAfter(since: number, timeoutMs: number): Promise<number | null> {
    const deadline = now() + timeoutMs;
    while (now() < deadline) {
      const ack = this.acks.find((t) => t > since);
      if (ack !== undefined) return ack;
      await sleep(20);
    }
    return null;
  }

  /** Time of the first failed attempt after `from` (null: none yet). */
  firstFailureAfter(from: number): number | null {
    return this.failures.find((f) => f.at >= from)?.at ?? null;
  }

  /**
   * What the client saw between `from` and `until`: runs of consecutive failed attempts with the same error (numbers
   * masked), relative to `from`, ms. Tells a write gap's parts apart (primary stopping, no writable node, timeouts).
   */
  failureSpans(from: number, until = Infinity): FailureSpan[] {
    const spans: FailureSpan[] = [];
    for (const failure of this.failures) {
      if (failure.at < from || failure.at > until) continue;
      const error = failure.error.replace(/\d+/g, 'N').slice(0, 200);
      const last = spans[spans.length - 1];
      if (last && last.error === error) {
        last.toMs = failure.at - from;
        last.count++;
        last.slowest = slower(last.slowest, failure.error);
      } else
        spans.push({ fromMs: failure.at - from, toMs: failure.at - from, count: 1, error, slowest: failure.error });
    }
    return spans;
  }

  /** The write-unavailability window around an event at `from`: the longest gap between acks that ends after it. */
  gapAround(from: number, until = Infinity): GapReport {
    let previous = [...this.acks].reverse().find((t) => t <= from) ?? from;
    let gap = 0;
    let gapStart = previous;
    for (const ack of this.acks) {
      if (ack <= from || ack > until) continue;
      if (ack - previous > gap) {
        gap = ack - previous;
        gapStart = previous;
      }
      previous = ack;
    }
    const first = this.acks.find((t) => t > from);
    const failed = this.failures.filter((f) => f.at >= from && f.at <= until);
    return {
      gapMs: gap,
      gapStartMs: gapStart - from,
      firstAfterMs: first === undefined ? NaN : first - from,
      failedAttempts: failed.length,
      errors: [...new Set(failed.map((f) => f.error.replace(/\d+/g, 'N')))].slice(0, 4),
    };
  }

  private async run(maxMs: number): Promise<void> {
    const started = now();
    let tick = 0;
    let failedRounds = 0;
    let reconnectAt = 0;
    while (!this.stopped && now() - started < maxMs) {
      const due = Math.max(started + tick * WRITE_INTERVAL_MS, this.client ? 0 : reconnectAt);
      const wait = due - now();
      if (wait > 0) await sleep(wait);
      tick = Math.max(tick + 1, Math.ceil((now() - started) / WRITE_INTERVAL_MS));
      if (this.stopped) break;
      try {
        if (!this.client) {
          const { client, index } = await connectReadWrite(this.ports, this.preferred, this.opened);
          this.client = client;
          this.preferred = index;
        }
        const inserted = await this.client.query('INSERT INTO bench_writes DEFAULT VALUES RETURNING id');
        this.acks.push(now());
        this.ackedIds.push(Number((inserted.rows[0] as { id: string }).id));
        failedRounds = 0;
      } catch (error) {
        failedRounds++;
        const backoff = Math.min(this.maxReconnectDelayMs, WRITE_INTERVAL_MS * 2 ** (failedRounds - 1));
        reconnectAt = now() + backoff;
        this.failures.push({ at: now(), error: (error as Error).message || String(error) });
        const broken = this.client;
        this.client = null;
        void broken?.end().catch(() => undefined);
      }
    }
  }
}

/** The attempt whose numbers add up to more (the timings dominate an error's digits). */
function slower(a: string, b: string): string {
  const total = (text: string) => [...text.matchAll(/all (\d+) ms/g)].reduce((sum, m) => sum + Number(m[1]), 0);
  return total(b) > total(a) ? b : a;
}

/**
 * libpq's read-write host selection: the first node, from the last good one (`preferred`), whose session
 * is writable; with the index of the node it connected to.
 */
export async function connectReadWrite(
  ports: number[],
  preferred: number,
  opened = { connections: 0 },
): Promise<{ client: Client; index: number }> {
  const errors: string[] = [];
  for (let i = 0; i < ports.length; i++) {
    const index = (preferred + i) % ports.length;
    const client = pgClient(ports[index], 1000);
    opened.connections++;
    // Each attempt's connect and SHOW times, for taking a slow round apart (the storm's gaps, issue 35).
    const started = now();
    let connectedMs = NaN;
    const took = () => `(connect ${connectedMs.toFixed(0)} ms, all ${(now() - started).toFixed(0)} ms)`;
    try {
      await client.connect();
      connectedMs = now() - started;
      const rows = (await client.query('SHOW transaction_read_only')).rows as { transaction_read_only: string }[];
      if (rows[0]?.transaction_read_only === 'off') return { client, index };
      errors.push(`port ${ports[index]}: session is read-only ${took()}`);
    } catch (error) {
      errors.push(`port ${ports[index]}: ${(error as Error).message} ${took()}`);
    }
    await client.end().catch(() => undefined);
  }
  throw new Error(errors.join('; '));
}

export async function createWriteTable(port: number): Promise<void> {
  await query(
    port,
    'CREATE TABLE IF NOT EXISTS bench_writes (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())',
    5000,
  );
}

/** The acknowledged ids `port`'s PostgreSQL does not hold: acknowledged writes lost (read on the final primary). */
export async function missingIds(port: number, ids: number[]): Promise<number[]> {
  if (ids.length === 0) return [];
  const client = pgClient(port, 5000);
  try {
    await client.connect();
    const found = (await client.query('SELECT id FROM bench_writes WHERE id = ANY($1::bigint[])', [ids])).rows as {
      id: string;
    }[];
    const held = new Set(found.map((row) => Number(row.id)));
    return ids.filter((id) => !held.has(id));
  } finally {
    await client.end().catch(() => undefined);
  }
}
