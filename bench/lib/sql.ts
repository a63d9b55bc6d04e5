import { Client } from 'pg';
import { PG_PASSWORD } from './cluster';

/** `serverTimeout: false` for a pooler, which refuses `statement_timeout` as a startup parameter (the client-side query_timeout stays). */
export function pgClient(port: number, timeoutMs = 1000, serverTimeout = true): Client {
  const client = new Client({
    host: '127.0.0.1',
    port,
    user: 'postgres',
    password: PG_PASSWORD,
    database: 'postgres',
    application_name: 'stator-bench',
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
    ...(serverTimeout ? { statement_timeout: timeoutMs } : {}),
  });
  client.on('error', () => undefined); // a dying server must not crash the benchmark
  return client;
}

/** One query on a short-lived connection; throws on any failure. */
export async function query<T extends Record<string, unknown>>(
  port: number,
  text: string,
  timeoutMs = 1000,
): Promise<T[]> {
  const client = pgClient(port, timeoutMs);
  try {
    await client.connect();
    return (await client.query(text)).rows as T[];
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** application_name of the replicas that stream from the server on `port`. */
export async function streamingReplicas(port: number): Promise<string[]> {
  const rows = await query<{ application_name: string }>(
    port,
    "SELECT application_name FROM pg_stat_replication WHERE state = 'streaming'",
  );
  return rows.map((r) => r.application_name);
}
