import { Client } from 'pg';
import { LocalNode } from '../../scripts/lib/local-cluster';

/** One statement on a node's PostgreSQL as the superuser, on a connection of its own. */
export async function sql<T = Record<string, unknown>>(
  node: LocalNode,
  text: string,
  params: unknown[] = [],
): Promise<T[]> {
  const client = new Client({
    connectionString: node.connectionString(),
    connectionTimeoutMillis: 1000,
    statement_timeout: 2000,
  });
  // A server shutting down terminates the connection (57P01): that is an outcome here, not a crash.
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.query(text, params)).rows as T[];
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Whether the node's PostgreSQL runs as a primary (not in recovery). */
export async function isPrimaryServer(node: LocalNode): Promise<boolean> {
  try {
    const [row] = await sql<{ recovery: boolean }>(node, 'SELECT pg_is_in_recovery() AS recovery');
    return !row.recovery;
  } catch {
    return false;
  }
}
