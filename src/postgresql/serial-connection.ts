import { Client, ClientConfig, QueryConfig, QueryResult } from 'pg';

export interface SerialConnectionSettings {
  /** Server-side `statement_timeout`, and (plus a margin) the client-side wait for any answer. */
  statementTimeoutMs: number;
  connectTimeoutMs: number;
}

/**
 * One lazily opened `pg` Client that runs one statement at a time. A failed call destroys the
 * client, so the next call reconnects (the server may have restarted); the error itself is passed
 * on. Every wait has a deadline: the connect, and each statement on the client side too, which also
 * covers a frozen server where statement_timeout never fires.
 */
export class SerialConnection {
  private client: Client | null = null;
  private connecting: Promise<Client> | null = null;
  /** The tail of the queue of statements. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly config: ClientConfig,
    private readonly settings: SerialConnectionSettings,
  ) {}

  /**
   * `preparedAs`: the statement is prepared once per connection under that name and then only executed: a
   * large statement run every second (the sampler's) costs its planning once, not on every run.
   */
  run(sql: string, params?: unknown[], timeoutMs?: number, preparedAs?: string): Promise<QueryResult | QueryResult[]> {
    const next = this.queue.then(() => this.runNow(sql, params, timeoutMs, preparedAs));
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Closes the connection; the next call opens a new one. */
  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    this.connecting = null;
    if (client) await client.end().catch(() => undefined);
  }

  private async runNow(
    sql: string,
    params?: unknown[],
    timeoutMs?: number,
    preparedAs?: string,
  ): Promise<QueryResult | QueryResult[]> {
    const client = await this.connected();
    try {
      const config: QueryConfig & { query_timeout: number } = {
        text: sql,
        values: params,
        ...(preparedAs ? { name: preparedAs } : {}),
        query_timeout: timeoutMs ?? this.settings.statementTimeoutMs + 1000,
      };
      return await client.query(config);
    } catch (error) {
      this.discard(client);
      throw error;
    }
  }

  private connected(): Promise<Client> {
    if (this.client) return Promise.resolve(this.client);
    if (!this.connecting) {
      const client = new Client({
        ...this.config,
        connectionTimeoutMillis: this.settings.connectTimeoutMs,
        statement_timeout: this.settings.statementTimeoutMs,
        keepAlive: true,
      });
      // An idle connection dropped by a server restart must not crash the process: forget it instead.
      client.on('error', () => this.discard(client));
      client.on('end', () => this.discard(client));
      const attempt: Promise<Client> = client
        .connect()
        .then(() => {
          if (this.connecting !== attempt) {
            // close() ran while we were connecting.
            client.end().catch(() => undefined);
            throw new Error('connection closed while connecting');
          }
          this.client = client;
          return client;
        })
        .catch((error) => {
          this.discard(client);
          throw error;
        })
        .finally(() => {
          if (this.connecting === attempt) this.connecting = null;
        });
      this.connecting = attempt;
    }
    return this.connecting;
  }

  private discard(client: Client): void {
    if (this.client === client) this.client = null;
    client.end().catch(() => undefined);
  }
}
