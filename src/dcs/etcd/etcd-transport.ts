import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Backoff } from '../../common/backoff';
import type { Logger } from '../../common/logger';
import type { TermRelease } from '../../common/term-release';
import { isSuccess, type EtcdAnswer } from './etcd-answer';
import type { EtcdCarrier, EtcdTls } from './etcd-carrier';
import { GatewayCarrier } from './gateway-carrier';

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
  /** Passphrase of an encrypted `key` (Patroni's `key_password`). */
  keyPassword?: string;
  /** etcd's RBAC user; every request then carries a token obtained with it. */
  username?: string;
  password?: string;
  /** Where each re-authentication after an expired token is reported (one line each); none by default. */
  logger?: Pick<Logger, 'info'>;
  /** How requests travel; by default the JSON gateway, or gRPC where the gateway cannot serve (usesGrpc). */
  transport?: 'gateway' | 'grpc';
  /**
   * Asked for other hosts when every host failed (etcd3.srv asks DNS again, as Patroni does): the
   * hosts to use from then on, or undefined to keep them. Asked in the background, never twice at
   * once, and less often each time it brings nothing new (REDISCOVERY_MIN_MS doubling to _MAX_MS).
   */
  rediscoverHosts?: () => Promise<string[] | undefined>;
}

const REDISCOVERY_MIN_MS = 5_000;
const REDISCOVERY_MAX_MS = 300_000;

/** The client key as PEM; an encrypted one decrypted in memory, since the gRPC carrier takes only a plain key. */
function clientKey(connection: EtcdConnection): Buffer | undefined {
  const file = connection.key ?? connection.cert;
  if (!file) return undefined;
  if (connection.keyPassword === undefined) return readFileSync(file);
  const key = createPrivateKey({ key: readFileSync(file), format: 'pem', passphrase: connection.keyPassword });
  return Buffer.from(key.export({ type: 'pkcs8', format: 'pem' }));
}

/** gRPC's UNAUTHENTICATED, as the gateway maps it to HTTP. */
const HTTP_UNAUTHORIZED = 401;

/**
 * One request to etcd, with failover between hosts, over TLS when configured and with an auth
 * token when a user is configured.
 *
 * The token is obtained on first use and again when etcd answers that it is no longer valid
 * (simple tokens expire after 5 idle minutes, and a restarted etcd forgets them); the request is
 * then sent once more within the caller's deadline. Concurrent requests share one authentication.
 *
 * Requests go through etcd's JSON gateway, except with a client certificate and a user together:
 * the gateway refuses those (see GATEWAY_REFUSES_CLIENT_CERTIFICATES), so they go over gRPC.
 */
export class EtcdTransport {
  private hosts: string[];
  private readonly scheme: 'http' | 'https';
  private readonly carrier: EtcdCarrier;
  /** Index of the host that answered last; requests start there. */
  private preferredHost = 0;
  private token: Promise<string> | null = null;
  /** The token `token` resolved to, so that only the first request refused with it renews it. */
  private currentToken: string | null = null;
  private rediscovering = false;
  private rediscoveryNotBefore = 0;
  private readonly rediscoveryInterval = new Backoff(REDISCOVERY_MIN_MS, REDISCOVERY_MAX_MS);

  constructor(private readonly connection: EtcdConnection) {
    if (connection.hosts.length === 0) throw new Error('etcd: at least one host is required');
    this.hosts = withoutScheme(connection.hosts);
    this.scheme = connection.protocol ?? 'http';
    const read = (file: string | undefined) => (file ? readFileSync(file) : undefined);
    const tls =
      this.scheme === 'https'
        ? { ca: read(connection.cacert), cert: read(connection.cert), key: clientKey(connection) }
        : null;
    this.carrier = usesGrpc(connection) ? grpcCarrier(tls) : new GatewayCarrier(tls);
  }

  get endpoints(): string {
    return this.hosts.map((host) => `${this.scheme}://${host}`).join(', ');
  }

  /** Sends one request; an expired token is renewed and the request sent again, once. */
  async send(path: string, body: unknown, signal: AbortSignal): Promise<EtcdAnswer> {
    if (!this.connection.username) return this.post(path, body, signal, null);
    const started = performance.now();
    const usedToken = await this.authToken(signal);
    const response = await this.post(path, body, signal, usedToken);
    if (response.status !== HTTP_UNAUTHORIZED) return response;
    await response.discard();
    const refused = performance.now();
    // Requests that failed on the same token share one re-authentication (and one log line).
    if (this.currentToken === usedToken) {
      this.token = null;
      this.currentToken = null;
      const token = await this.authToken(signal);
      this.connection.logger?.info(
        `etcd no longer accepted the auth token of user ${this.connection.username} (expired or forgotten by etcd); ` +
          `re-authenticated in ${Math.round(performance.now() - refused)} ms, the request retried after ${Math.round(performance.now() - started)} ms`,
      );
      return this.post(path, body, signal, token);
    }
    return this.post(path, body, signal, await this.authToken(signal));
  }

  close(): void {
    this.carrier.close();
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
    if (!isSuccess(response) || !answer.token) {
      throw new EtcdAuthenticationError(
        `etcd refused user ${name}: ${answer.message ?? answer.error ?? `HTTP ${response.status}`}`,
      );
    }
    this.currentToken = answer.token;
    return answer.token;
  }

  /**
   * Starts at the preferred host and moves to the next one when the connection fails. A timeout
   * does not move on within the same call (the deadline is spent) but makes the next call start at
   * the next host, so a frozen member is not retried first.
   */
  private async post(path: string, body: unknown, signal: AbortSignal, token: string | null): Promise<EtcdAnswer> {
    let lastError: unknown = null;
    for (let attempt = 0; attempt < this.hosts.length; attempt++) {
      const index = (this.preferredHost + attempt) % this.hosts.length;
      try {
        const response = await this.carrier.request(`${this.scheme}://${this.hosts[index]}`, path, body, signal, token);
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
    const endpoints = this.endpoints;
    this.rediscoverInBackground();
    throw new EtcdHostsUnreachable(`no etcd host reachable (${endpoints}): ${causeOf(lastError)}`);
  }

  /** The caller's deadline is not spent waiting for DNS: new hosts serve the next request. */
  private rediscoverInBackground(): void {
    const rediscover = this.connection.rediscoverHosts;
    if (!rediscover || this.rediscovering || performance.now() < this.rediscoveryNotBefore) return;
    this.rediscovering = true;
    let changed = false;
    rediscover()
      .then((hosts) => {
        const next = hosts && hosts.length > 0 ? withoutScheme(hosts) : undefined;
        if (!next || next.join(',') === this.hosts.join(',')) return;
        this.hosts = next;
        this.preferredHost = 0;
        changed = true;
      })
      .catch(() => undefined)
      .finally(() => {
        if (changed) this.rediscoveryInterval.reset();
        this.rediscoveryNotBefore = performance.now() + this.rediscoveryInterval.next();
        this.rediscovering = false;
      });
  }
}

function withoutScheme(hosts: string[]): string[] {
  return hosts.map((host) => host.replace(/^https?:\/\//, '').replace(/\/+$/, ''));
}

/** What etcd's gateway answers, in plain text, to any request with a client certificate once RBAC is on. */
const GATEWAY_REFUSES_CLIENT_CERTIFICATES = 'CommonName of client sending a request against gateway';

/** A gateway answer that is not JSON, as a message that says what it means. */
export function explainPlainAnswer(text: string, path: string): string {
  if (text.includes(GATEWAY_REFUSES_CLIENT_CERTIFICATES)) {
    return (
      'etcd refuses gateway requests that carry a client certificate once authentication is enabled: ' +
      "set etcd3.username and etcd3.password too, and Stator speaks etcd's gRPC API, which accepts both"
    );
  }
  return `etcd ${path}: not a JSON answer: ${text.slice(0, 120)}`;
}

/** The gateway cannot carry a client certificate and a user together; gRPC can. */
export function usesGrpc(connection: EtcdConnection): boolean {
  if (connection.transport) return connection.transport === 'grpc';
  return connection.protocol === 'https' && Boolean(connection.cert) && Boolean(connection.username);
}

/**
 * What the fence needs to revoke `leaseId` itself (it speaks the JSON gateway only): none for an agent on gRPC,
 * whose configuration the gateway cannot carry.
 */
export function leaseReleaseThroughGateway(connection: EtcdConnection, leaseId: string): TermRelease | null {
  const { hosts, protocol, cacert, cert, key, username, password } = connection;
  if (usesGrpc(connection)) return null;
  const scheme = protocol ?? 'http';
  return {
    endpoints: hosts.map((host) => `${scheme}://${host.replace(/^https?:\/\//, '').replace(/\/+$/, '')}`),
    leaseId,
    tls: scheme === 'https' ? { cacert, cert, key: key ?? cert } : undefined,
    auth: username ? { username, password: password ?? '' } : undefined,
  };
}

/**
 * gRPC (and its protobuf runtime, several MiB) is loaded only by the agents that speak it: the
 * gateway serves every other configuration.
 */
function grpcCarrier(tls: EtcdTls | null): EtcdCarrier {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use, not at start (see above)
  const { GrpcCarrier } = require('./grpc-carrier') as typeof import('./grpc-carrier');
  return new GrpcCarrier(tls);
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
