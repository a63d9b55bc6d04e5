import { readFileSync } from 'node:fs';
import { Agent, fetch, Response } from 'undici';

/** How to reach etcd: its client endpoints, TLS and RBAC credentials (Patroni's `etcd3` section). */
export interface EtcdConnection {
  /** `host:port` endpoints, tried in turn. */
  hosts: string[];
  protocol?: 'http' | 'https';
  /** PEM files: the CA that signed etcd's certificate, and this client's certificate and key. */
  cacert?: string;
  cert?: string;
  /** Default: `cert` (a PEM file may hold both). */
  key?: string;
  /** etcd's RBAC user; every request then carries a token obtained with it. */
  username?: string;
  password?: string;
}

/** gRPC's UNAUTHENTICATED, as the gateway maps it to HTTP. */
const HTTP_UNAUTHORIZED = 401;

/**
 * One POST to etcd's JSON gateway, with failover between hosts, over TLS when configured and with
 * an auth token when a user is configured.
 *
 * The token is obtained on first use and again when etcd answers that it is no longer valid
 * (simple tokens expire after 5 idle minutes, and a restarted etcd forgets them); the request is
 * then sent once more within the caller's deadline. Concurrent requests share one authentication.
 */
export class EtcdTransport {
  private readonly hosts: string[];
  private readonly scheme: 'http' | 'https';
  private readonly dispatcher: Agent;
  /** Index of the host that answered last; requests start there. */
  private preferredHost = 0;
  private token: Promise<string> | null = null;

  constructor(private readonly connection: EtcdConnection) {
    if (connection.hosts.length === 0) throw new Error('etcd: at least one host is required');
    this.hosts = connection.hosts.map((host) => host.replace(/^https?:\/\//, '').replace(/\/+$/, ''));
    this.scheme = connection.protocol ?? 'http';
    const read = (file: string | undefined) => (file ? readFileSync(file) : undefined);
    this.dispatcher = new Agent({
      connect: this.scheme === 'https' ? { ca: read(connection.cacert), cert: read(connection.cert), key: read(connection.key ?? connection.cert) } : {},
      // The gateway's watch streams stay open without traffic; the deadlines are the callers'.
      bodyTimeout: 0,
      headersTimeout: 0,
    });
  }

  get endpoints(): string {
    return this.hosts.map((host) => `${this.scheme}://${host}`).join(', ');
  }

  /** Sends one request; an expired token is renewed and the request sent again, once. */
  async send(path: string, body: unknown, signal: AbortSignal): Promise<Response> {
    if (!this.connection.username) return this.post(path, body, signal, null);
    const response = await this.post(path, body, signal, await this.authToken(signal));
    if (response.status !== HTTP_UNAUTHORIZED) return response;
    await response.body?.cancel();
    this.token = null;
    return this.post(path, body, signal, await this.authToken(signal));
  }

  close(): void {
    void this.dispatcher.close().catch(() => undefined);
  }

  private authToken(signal: AbortSignal): Promise<string> {
    if (!this.token) {
      const pending = this.authenticate(signal);
      // A failed authentication is not kept: the next request tries again.
      pending.catch(() => {
        if (this.token === pending) this.token = null;
      });
      this.token = pending;
    }
    return this.token;
  }

  private async authenticate(signal: AbortSignal): Promise<string> {
    const { username: name, password } = this.connection;
    const response = await this.post('/v3/auth/authenticate', { name, password }, signal, null);
    const text = await response.text();
    let answer: { token?: string; message?: string; error?: string };
    try {
      answer = JSON.parse(text) as typeof answer;
    } catch {
      throw new EtcdAuthenticationError(explainPlainAnswer(text, '/v3/auth/authenticate'));
    }
    if (!response.ok || !answer.token) {
      throw new EtcdAuthenticationError(`etcd refused user ${name}: ${answer.message ?? answer.error ?? `HTTP ${response.status}`}`);
    }
    return answer.token;
  }

  /**
   * Starts at the preferred host and moves to the next one when the connection fails. A timeout
   * does not move on within the same call (the deadline is spent) but makes the next call start at
   * the next host, so a frozen member is not retried first.
   */
  private async post(path: string, body: unknown, signal: AbortSignal, token: string | null): Promise<Response> {
    let lastError: unknown = null;
    for (let attempt = 0; attempt < this.hosts.length; attempt++) {
      const index = (this.preferredHost + attempt) % this.hosts.length;
      try {
        const response = await fetch(`${this.scheme}://${this.hosts[index]}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(token ? { authorization: token } : {}) },
          body: JSON.stringify(body),
          signal,
          dispatcher: this.dispatcher,
        });
        this.preferredHost = index;
        return response;
      } catch (error) {
        if (signal.aborted) {
          this.preferredHost = (index + 1) % this.hosts.length;
          throw error;
        }
        lastError = error;
      }
    }
    throw new EtcdHostsUnreachable(`no etcd host reachable (${this.endpoints}): ${causeOf(lastError)}`);
  }
}

/** What etcd's gateway answers, in plain text, to any request with a client certificate once RBAC is on. */
const GATEWAY_REFUSES_CLIENT_CERTIFICATES = 'CommonName of client sending a request against gateway';

/** A gateway answer that is not JSON, as a message that says what it means. */
export function explainPlainAnswer(text: string, path: string): string {
  if (text.includes(GATEWAY_REFUSES_CLIENT_CERTIFICATES)) {
    return (
      'etcd refuses gateway requests that carry a client certificate once authentication is enabled: ' +
      'use etcd3.username/password without etcd3.cert, or client certificates without etcd users'
    );
  }
  return `etcd ${path}: not a JSON answer: ${text.slice(0, 120)}`;
}

/** Every host refused the connection or failed the TLS handshake. */
export class EtcdHostsUnreachable extends Error {}

/** etcd refused the configured user's name or password. */
export class EtcdAuthenticationError extends Error {}

/** fetch's "fetch failed" hides the reason (refused, TLS...) in `cause`. */
function causeOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = (error as Error & { cause?: unknown }).cause;
  return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
}
