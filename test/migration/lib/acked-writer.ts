import { Client } from 'pg';
import { setTimeout as sleep } from 'node:timers/promises';
import { query } from '../../../bench/lib/sql';
import { connectReadWrite } from '../../../bench/lib/write-probe';

const WRITE_INTERVAL_MS = 50;

/** One acknowledged insert: its id, when its COMMIT returned, where it went, during which step, and its WAL position there. */
export interface Ack {
  id: number;
  at: number;
  port: number;
  step: string;
  /** pg_current_wal_lsn() in the inserting transaction, as a number: the commit record follows it. */
  lsn: bigint;
}

/**
 * A client that inserts a numbered row every 50 ms on whichever node is writable (libpq's
 * `target_session_attrs=read-write` over every node), keeping each acknowledged insert (id, time, port,
 * step, WAL position): every id it keeps must be in the table at the end, whichever agent led meanwhile.
 */
export class AckedWriter {
  readonly acked: Ack[] = [];
  private client: Client | null = null;
  private port = 0;
  private step = 'start';
  private stopped = false;
  private loop: Promise<void> | null = null;
  private preferred = 0;

  constructor(private readonly ports: () => number[]) {}

  static async createTable(port: number): Promise<void> {
    await query(
      port,
      'CREATE TABLE IF NOT EXISTS migration_writes (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())',
      5000,
    );
  }

  start(): void {
    this.loop = this.run();
  }

  /** The step in progress, recorded with each insert acknowledged from now on. */
  mark(step: string): void {
    this.step = step;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    await this.client?.end().catch(() => undefined);
    this.client = null;
  }

  /** The longest interval between two acknowledged inserts within [from, until], ms. */
  longestGap(from: number, until = performance.now()): number {
    let previous = [...this.acked].reverse().find((ack) => ack.at <= from)?.at ?? from;
    let gap = 0;
    for (const { at } of this.acked) {
      if (at <= from || at > until) continue;
      gap = Math.max(gap, at - previous);
      previous = at;
    }
    return Math.max(gap, until - previous);
  }

  /** Acknowledged inserts (so far) missing from the table as the node on `port` holds it. */
  async lostOn(port: number): Promise<Ack[]> {
    const acked = [...this.acked];
    const rows = await query<{ id: string }>(port, 'SELECT id FROM migration_writes', 10_000);
    const present = new Set(rows.map((row) => Number(row.id)));
    return acked.filter((ack) => !present.has(ack.id));
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const due = performance.now() + WRITE_INTERVAL_MS;
      try {
        if (!this.client) {
          const ports = this.ports();
          const { client, index } = await connectReadWrite(ports, this.preferred);
          this.client = client;
          this.preferred = index;
          this.port = ports[index];
        }
        const step = this.step;
        const result = await this.client.query(
          "INSERT INTO migration_writes DEFAULT VALUES RETURNING id, pg_current_wal_lsn() - '0/0' AS lsn",
        );
        const row = result.rows[0] as { id: string; lsn: string };
        this.acked.push({ id: Number(row.id), at: performance.now(), port: this.port, step, lsn: BigInt(row.lsn) });
      } catch {
        const broken = this.client;
        this.client = null;
        void broken?.end().catch(() => undefined);
      }
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
    }
  }
}
