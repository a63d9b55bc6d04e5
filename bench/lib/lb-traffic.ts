import { pgClient } from './sql';
import { now, sleep } from './util';

/** A write acknowledged through the load balancer: its tag, when, and which PostgreSQL port took it. */
export interface AckedWrite {
  tag: string;
  at: number;
  port: number;
}

/** A read through the replica port answered by a server not in recovery: a primary. */
export interface MisroutedRead {
  at: number;
  port: number;
}

export const LB_WRITE_INTERVAL_MS = 50;
export const LB_READ_INTERVAL_MS = 20;
export const LB_TABLE = 'lb_writes';

/**
 * Clients as applications behind a load balancer are: a writer opening a new connection through the
 * primary port and inserting one tagged row every 50 ms, and a reader opening a new connection
 * through the replica port every 20 ms and asking `pg_is_in_recovery()`. Connect and statement
 * timeouts 1 s; after a failure each waits its interval and tries again.
 */
export class LbTraffic {
  readonly acked: AckedWrite[] = [];
  readonly misrouted: MisroutedRead[] = [];
  reads = 0;
  failedReads = 0;
  failedWrites = 0;
  /** What the writer's failed statements said, and how often. */
  readonly writeErrors = new Map<string, number>();
  private running = true;
  private seq = 0;
  private readonly loops: Promise<void>[];

  /** `primaryPort`: where the writer connects (HAProxy's primary port, or PgBouncer in front of it). */
  constructor(
    private readonly primaryPort: number,
    private readonly replicaPort: number,
    private readonly runTag: string,
    /** The writer goes through PgBouncer, which refuses a statement_timeout startup parameter. */
    private readonly writerViaPooler = false,
  ) {
    this.loops = [this.writeLoop(), this.readLoop()];
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  /** Resolves with the first write acknowledged after `from` by the server on `port` (any port when null), or null after `timeoutMs`. */
  async waitForAck(from: number, port: number | null, timeoutMs: number): Promise<AckedWrite | null> {
    const deadline = now() + timeoutMs;
    while (now() < deadline) {
      const found = this.acked.find((w) => w.at >= from && (port === null || w.port === port));
      if (found) return found;
      await sleep(20);
    }
    return null;
  }

  /** Longest interval between consecutive acknowledged writes from the last one before `from` on. */
  gapFrom(from: number): { gapMs: number; gapStartMs: number } {
    const lastBefore = [...this.acked].reverse().find((w) => w.at < from);
    const times = [
      ...(lastBefore ? [lastBefore.at] : [from]),
      ...this.acked.filter((w) => w.at >= from).map((w) => w.at),
    ];
    let gapMs = 0;
    let gapStartMs = NaN;
    for (let i = 1; i < times.length; i++) {
      if (times[i] - times[i - 1] > gapMs) {
        gapMs = times[i] - times[i - 1];
        gapStartMs = times[i - 1] - from;
      }
    }
    return { gapMs, gapStartMs };
  }

  private async writeLoop(): Promise<void> {
    while (this.running) {
      const tag = `${this.runTag}-${++this.seq}`;
      const rows = await once<{ port: number }>(
        this.primaryPort,
        `INSERT INTO ${LB_TABLE} (tag) VALUES ($1) RETURNING inet_server_port() AS port`,
        [tag],
        (message) => this.writeErrors.set(message, (this.writeErrors.get(message) ?? 0) + 1),
        !this.writerViaPooler,
      );
      if (rows) this.acked.push({ tag, at: now(), port: rows[0].port });
      else this.failedWrites++;
      await sleep(LB_WRITE_INTERVAL_MS);
    }
  }

  private async readLoop(): Promise<void> {
    while (this.running) {
      const rows = await once<{ recovery: boolean; port: number }>(
        this.replicaPort,
        'SELECT pg_is_in_recovery() AS recovery, inet_server_port() AS port',
        [],
      );
      if (rows) {
        this.reads++;
        if (!rows[0].recovery) this.misrouted.push({ at: now(), port: rows[0].port });
      } else this.failedReads++;
      await sleep(LB_READ_INTERVAL_MS);
    }
  }
}

/** One statement on a new connection; null on any failure (told to `failed`). */
async function once<T>(
  port: number,
  text: string,
  values: unknown[],
  failed?: (message: string) => void,
  serverTimeout = true,
): Promise<T[] | null> {
  const client = pgClient(port, 1000, serverTimeout);
  try {
    await client.connect();
    const result = await client.query(text, values);
    return result.rows as T[];
  } catch (error) {
    failed?.((error as Error).message);
    return null;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Which of `tags` the server on `port` holds. */
export async function presentTags(port: number, tags: string[]): Promise<Set<string>> {
  const rows = await once<{ tag: string }>(port, `SELECT tag FROM ${LB_TABLE} WHERE tag = ANY($1)`, [tags]);
  if (!rows) throw new Error(`cannot read ${LB_TABLE} on port ${port}`);
  return new Set(rows.map((r) => r.tag));
}

export async function createLbTable(port: number): Promise<void> {
  const rows = await once(
    port,
    `CREATE TABLE IF NOT EXISTS ${LB_TABLE} (tag text PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())`,
    [],
  );
  if (!rows) throw new Error(`cannot create ${LB_TABLE} on port ${port}`);
}
