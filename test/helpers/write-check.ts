import { Client } from 'pg';
import { splitBrainIntervals, SplitBrainInterval } from '../../scripts/lib/chaos/checker';
import { Acknowledgement, ReadWriteClient, WritableNode } from '../../scripts/lib/chaos/writer';
import { waitFor } from './wait-for';

/**
 * The write checker of `npm run chaos` for one scenario spec: clients that write all along as libpq with
 * `target_session_attrs=read-write` does, the writes they saw acknowledged, and what a user would ask of them
 * afterwards (which ones the final leader lacks, when two nodes acknowledged writes at once). Times are ms since the
 * checker was made.
 */
export class WriteCheck {
  readonly acknowledged: Acknowledgement[] = [];
  private readonly started = performance.now();
  private key = 0;
  private writers: ReadWriteClient[] = [];

  now(): number {
    return performance.now() - this.started;
  }

  /** Creates the table on `leader`, then starts `clients` writers over `cluster`'s nodes. */
  async start(cluster: { readonly nodes: readonly WritableNode[] }, leader: WritableNode, clients = 2): Promise<void> {
    const client = new Client({ connectionString: leader.connectionString() });
    await client.connect();
    try {
      await client.query('CREATE TABLE chaos (n bigint PRIMARY KEY, node text NOT NULL)');
    } finally {
      await client.end();
    }
    const keys = { next: () => ++this.key };
    this.writers = Array.from(
      { length: clients },
      () => new ReadWriteClient(cluster, keys, this.acknowledged, this.started),
    );
    this.writers.forEach((writer) => writer.start());
  }

  async stop(): Promise<void> {
    await Promise.all(this.writers.map((writer) => writer.stop()));
  }

  /** Every write acknowledged so far that `leader` does not hold, as `n@node at ms`. */
  async missingOn(leader: WritableNode): Promise<string[]> {
    const before = [...this.acknowledged];
    const stored = await storedOn(leader);
    return before.filter((ack) => !stored.has(ack.n)).map((ack) => `${ack.n}@${ack.node} at ${Math.round(ack.at)}`);
  }

  twoWriterIntervals(): SplitBrainInterval[] {
    return splitBrainIntervals(this.acknowledged);
  }

  /** Writes acknowledged after `from` (and before `to`), by `node` when given. */
  between(from: number, to = Infinity, node?: string): Acknowledgement[] {
    return this.acknowledged.filter((ack) => ack.at > from && ack.at < to && (node === undefined || ack.node === node));
  }

  /** The longest stretch without an acknowledged write between `from` and `to`. */
  longestGap(from: number, to: number): number {
    const points = [
      from,
      ...this.between(from, to)
        .map((ack) => ack.at)
        .sort((a, b) => a - b),
      to,
    ];
    return Math.max(...points.slice(1).map((at, i) => at - points[i]));
  }

  /** When (ms since the checker began) `probe` first holds, polled every 100 ms for `timeoutMs`. */
  async firstTime(probe: () => Promise<boolean>, timeoutMs: number, description: string): Promise<number> {
    await waitFor(probe, { timeoutMs, intervalMs: 100, description });
    return this.now();
  }
}

async function storedOn(node: WritableNode): Promise<Set<number>> {
  const client = new Client({ connectionString: node.connectionString(), connectionTimeoutMillis: 2000 });
  await client.connect();
  try {
    return new Set(((await client.query('SELECT n FROM chaos')).rows as { n: string }[]).map((row) => Number(row.n)));
  } finally {
    await client.end();
  }
}
