import { Client, ClientConfig } from 'pg';
import { LibpqOptions, PostgresqlConfig } from '../config/config.types';
import { clientSsl } from './libpq-ssl';

/** Where to reach a server: TCP, or a unix socket directory as `host`. */
export interface LocalConnection {
  host: string;
  port: number;
  user: string;
  password?: string;
  database?: string;
  /** The role's libpq options (TLS client certificates); unused over a unix socket. */
  libpq?: LibpqOptions;
}

/**
 * The local server's TCP address from `postgresql.listen` (`host[,host...]:port`). A wildcard or a
 * list holding the loopback address means 127.0.0.1; otherwise the first listed address.
 */
export function localConnection(config: PostgresqlConfig): LocalConnection {
  const separator = config.listen.lastIndexOf(':');
  if (separator < 0) throw new Error(`postgresql.listen must be host:port, got ${config.listen}`);
  const hosts = config.listen
    .slice(0, separator)
    .split(',')
    .map((host) => host.trim().replace(/^\[|\]$/g, ''))
    .filter(Boolean);
  const port = Number(config.listen.slice(separator + 1));
  if (!Number.isInteger(port) || port <= 0 || port > 65535)
    throw new Error(`bad port in postgresql.listen: ${config.listen}`);
  const loopbackOrWildcard =
    hosts.length === 0 || hosts.some((host) => ['*', '0.0.0.0', '::', '127.0.0.1', 'localhost'].includes(host));
  const superuser = config.authentication.superuser;
  const login = { port, user: superuser.username, password: superuser.password, database: 'postgres' };
  if (config.use_unix_socket) return { ...login, host: socketDirectory(config) };
  return { ...login, host: loopbackOrWildcard ? '127.0.0.1' : hosts[0], libpq: superuser.libpq };
}

/** The first of `unix_socket_directories` (Stator's default: /tmp), where `use_unix_socket` connects. */
export function socketDirectory(config: PostgresqlConfig): string {
  const configured = String(config.parameters.unix_socket_directories ?? '/tmp');
  return configured.split(',')[0].trim() || '/tmp';
}

/**
 * SQLSTATEs that prove a server answered and accepts connections even though this login failed
 * (what pg_isready counts as "accepting connections").
 */
const ANSWERED_BUT_REFUSED_LOGIN = new Set(['28000', '28P01', '3D000']);

/**
 * One connection attempt and `SELECT 1`. True when the server accepts connections (a refused login
 * counts, like pg_isready); false while it is down or still starting (57P03).
 */
export async function serverAcceptsConnections(connection: LocalConnection, timeoutMs = 1000): Promise<boolean> {
  const client = new Client({
    ...toClientConfig(connection),
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch (error) {
    return ANSWERED_BUT_REFUSED_LOGIN.has((error as { code?: string }).code ?? '');
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** node-postgres settings for `connection`, TLS included. */
export function toClientConfig(connection: LocalConnection): ClientConfig {
  return {
    host: connection.host,
    port: connection.port,
    user: connection.user,
    password: connection.password,
    database: connection.database ?? 'postgres',
    application_name: 'stator',
    ssl: connection.host.startsWith('/') ? false : clientSsl(connection.libpq),
  };
}
