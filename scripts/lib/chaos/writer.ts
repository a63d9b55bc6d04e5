import { Client, QueryConfig } from 'pg';

/** A node a client can write to: LocalCluster's nodes, or the Patroni nodes of a side-by-side run. */
export interface WritableNode {
  name: string;
  connectionString(): string;
}

/** One write a client saw acknowledged: the row's key, the node that acknowledged it, and when (ms since the run began). */
export interface Acknowledgement {
  n: number;
  node: string;
  at: number;
}

/**
 * A client as libpq with `target_session_attrs=read-write` behaves: it tries the hosts in order,
 * keeps the first connection that accepts writes, and writes a row every `intervalMs` on it until
 * that connection fails. A primary that keeps accepting writes after another was promoted keeps
 * receiving them: that is what the checker looks for.
 */
export class ReadWriteClient {
  private running = false;
  private loop: Promise<void> | null = null;
  private client: Client | null = null;
  private clientNode: WritableNode | null = null;

  constructor(
    /** The hosts, tried in this order. */
    private readonly cluster: { readonly nodes: readonly WritableNode[] },
    private readonly keys: { next: () => number },
    private readonly acknowledged: Acknowledgement[],
    private readonly started: number,
    private readonly intervalMs = 50,
  ) {}

  start(): void {
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    await this.drop();
  }

  private async run(): Promise<void> {
    while (this.running) {
      const connected = this.client ?? (await this.connectReadWrite());
      if (connected && this.clientNode) {
        const n = this.keys.next();
        try {
          await connected.query({
            text: 'INSERT INTO chaos (n, node) VALUES ($1, $2)',
            values: [n, this.clientNode.name],
            query_timeout: 2000,
          } as QueryConfig & { query_timeout: number });
          this.acknowledged.push({ n, node: this.clientNode.name, at: performance.now() - this.started });
        } catch {
          await this.drop(); // unacknowledged: libpq's caller would reconnect and retry elsewhere
        }
      }
      await new Promise((resolve) => setTimeout(resolve, this.intervalMs));
    }
  }

  private async connectReadWrite(): Promise<Client | null> {
    for (const node of this.cluster.nodes) {
      const client = new Client({
        connectionString: node.connectionString(),
        connectionTimeoutMillis: 1000,
        query_timeout: 1000,
      });
      client.on('error', () => undefined);
      try {
        await client.connect();
        const [row] = (await client.query('SHOW transaction_read_only')).rows as { transaction_read_only: string }[];
        if (row.transaction_read_only === 'off') {
          this.client = client;
          this.clientNode = node;
          return client;
        }
      } catch {
        // this host is down or refuses: try the next, as libpq does
      }
      await client.end().catch(() => undefined);
    }
    return null;
  }

  private async drop(): Promise<void> {
    const client = this.client;
    this.client = null;
    this.clientNode = null;
    await client?.end().catch(() => undefined);
  }
}
