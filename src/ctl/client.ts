import { Agent, fetch } from 'undici';
import { basicAuthorizationHeader, BasicCredentials } from '../security/basic-auth';

/** How statorctl reaches a node's API: credentials for basic auth, TLS material, the deadline of each request. */
export interface Connection {
  auth?: BasicCredentials;
  /** PEM contents. */
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  /** Decrypts `key` (`ctl.keyfile_password`). */
  passphrase?: string;
  /**
   * `--insecure`, `ctl.insecure`, as patronictl: without a client certificate the server's is not checked;
   * with one, its CA still is, only not the host name it was issued for.
   */
  insecure?: boolean;
  timeoutMs: number;
}

/** The node answered with a status that is not 2xx; `text` is its body (plain text or JSON). */
export class ApiError extends Error {
  override readonly name = 'ApiError';

  constructor(
    readonly url: string,
    readonly status: number,
    readonly text: string,
  ) {
    super(`${url}: HTTP ${status}${text ? `: ${bodyMessage(text)}` : ''}`);
  }
}

/** No answer: connection refused, TLS failure, or the deadline passed. */
export class UnreachableError extends Error {
  override readonly name = 'UnreachableError';
}

export interface ApiAnswer {
  status: number;
  text: string;
  headers: Headers | { get(name: string): string | null };
}

/** One Server-Sent Events message of `/events/stream`. */
export interface SseMessage {
  event: string;
  data: string;
}

/** One node's API: `base` is its URL without a path (`http://host:8008`). */
export class ApiClient {
  private readonly dispatcher: Agent;

  constructor(
    readonly base: string,
    private readonly connection: Connection,
  ) {
    this.dispatcher = new Agent({
      connect: {
        ...(connection.ca ? { ca: connection.ca } : {}),
        ...(connection.cert ? { cert: connection.cert, key: connection.key ?? connection.cert } : {}),
        ...(connection.cert && connection.passphrase !== undefined ? { passphrase: connection.passphrase } : {}),
        rejectUnauthorized: !connection.insecure || connection.cert !== undefined,
        ...(connection.insecure && connection.cert ? { checkServerIdentity: () => undefined } : {}),
      },
    });
  }

  /** Clients of other members made from this one, closed with it. */
  private readonly others = new Map<string, ApiClient>();

  /** The same connection settings towards another member (`base` of its api_url). */
  forBase(base: string): ApiClient {
    if (base === this.base) return this;
    let client = this.others.get(base);
    if (!client) {
      client = new ApiClient(base, this.connection);
      this.others.set(base, client);
    }
    return client;
  }

  get timeoutMs(): number {
    return this.connection.timeoutMs;
  }

  /**
   * One request with the deadline; any status is returned (no throw), only no answer throws.
   * @throws UnreachableError naming the URL and the cause.
   */
  async send(method: string, path: string, body?: unknown, timeoutMs = this.connection.timeoutMs): Promise<ApiAnswer> {
    const url = this.base + path;
    const headers: Record<string, string> = { accept: 'application/json, text/plain' };
    if (this.connection.auth) headers.authorization = basicAuthorizationHeader(this.connection.auth);
    if (body !== undefined) headers['content-type'] = 'application/json';
    try {
      const response = await fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        dispatcher: this.dispatcher,
        signal: AbortSignal.timeout(timeoutMs),
      });
      return { status: response.status, text: await response.text(), headers: response.headers };
    } catch (error) {
      throw new UnreachableError(`${url}: ${describeFailure(error, timeoutMs)}`);
    }
  }

  /** GET parsed as JSON; non-2xx throws ApiError. */
  async getJson<T = unknown>(path: string): Promise<T> {
    const answer = await this.send('GET', path);
    if (answer.status < 200 || answer.status > 299) throw new ApiError(this.base + path, answer.status, answer.text);
    try {
      return JSON.parse(answer.text) as T;
    } catch {
      throw new ApiError(this.base + path, answer.status, `not JSON: ${answer.text.slice(0, 200)}`);
    }
  }

  /**
   * Follows `/events/stream` (SSE) until `signal` aborts or the node closes it; calls `onMessage` for each
   * message. Resolves once connected (the headers arrived) with a promise of the stream's end.
   */
  async stream(
    path: string,
    onMessage: (message: SseMessage) => void,
    signal: AbortSignal,
  ): Promise<{ ended: Promise<void> }> {
    const url = this.base + path;
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (this.connection.auth) headers.authorization = basicAuthorizationHeader(this.connection.auth);
    let response;
    const connectDeadline = AbortSignal.timeout(this.connection.timeoutMs);
    try {
      response = await fetch(url, {
        headers,
        dispatcher: this.dispatcher,
        signal: AbortSignal.any([signal, connectDeadline]),
      });
    } catch (error) {
      throw new UnreachableError(`${url}: ${describeFailure(error, this.connection.timeoutMs)}`);
    }
    if (response.status !== 200 || !response.body) {
      throw new ApiError(url, response.status, await response.text().catch(() => ''));
    }
    const body = response.body;
    const ended = (async () => {
      const decoder = new TextDecoder();
      let buffer = '';
      try {
        for await (const chunk of body) {
          buffer += decoder.decode(chunk as Uint8Array, { stream: true });
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const frame = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const message = parseSseFrame(frame);
            if (message) onMessage(message);
          }
        }
      } catch (error) {
        if (!signal.aborted) throw new UnreachableError(`${url}: the event stream broke: ${(error as Error).message}`);
      }
    })();
    // Whoever awaits `ended` sees a broken stream; nobody awaiting must not crash the process.
    ended.catch(() => undefined);
    return { ended };
  }

  async close(): Promise<void> {
    await Promise.all([...this.others.values()].map((client) => client.close()));
    await this.dispatcher.close().catch(() => undefined);
  }
}

/** `event:` and `data:` lines of one frame; comments (heartbeats) give null. */
export function parseSseFrame(frame: string): SseMessage | null {
  let event = 'message';
  const data: string[] = [];
  for (const line of frame.split('\n')) {
    if (line.startsWith(':') || line === '') continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return data.length === 0 ? null : { event, data: data.join('\n') };
}

/** A JSON error body's message, or the text itself (the operation endpoints answer plain text). */
export function bodyMessage(text: string): string {
  try {
    const value = JSON.parse(text) as { message?: unknown; error?: unknown } | null;
    if (value && typeof value.message === 'string') return value.message;
    if (value && typeof value.error === 'string') return value.error;
  } catch {
    // plain text
  }
  return text.trim().slice(0, 500);
}

function describeFailure(error: unknown, timeoutMs: number): string {
  const err = error as Error & { cause?: Error & { code?: string } };
  if (err.name === 'TimeoutError' || err.name === 'AbortError') return `no answer within ${timeoutMs / 1000} s`;
  const cause = err.cause;
  if (cause?.code === 'ECONNREFUSED') return 'connection refused';
  if (cause?.code) return `${cause.code}${cause.message ? ` (${cause.message})` : ''}`;
  return cause?.message ?? err.message;
}
