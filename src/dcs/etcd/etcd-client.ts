import { Observable } from 'rxjs';
import type { Response } from 'undici';
import { EtcdAuthenticationError, EtcdConnection, EtcdHostsUnreachable, EtcdTransport, explainPlainAnswer } from './etcd-transport';

/**
 * A thin etcd v3 client over etcd's gRPC-JSON gateway (HTTP/1.1, JSON, base64 keys and values),
 * built on undici's fetch; over TLS and with an RBAC user when configured (see EtcdTransport).
 *
 * Deliberately plain: every request carries the caller's deadline, a connection failure moves on
 * to the next host within that deadline, and nothing else retries. There is no circuit breaker
 * and no background reconnection; callers own their retry policy (see EtcdDcs). int64 fields
 * (revisions, lease ids) stay decimal strings as the gateway sends them.
 */
export class EtcdClient {
  private readonly transport: EtcdTransport;
  private highestRevision: string | null = null;
  /**
   * One controller per request or watch in flight, aborted by close(). Per-request controllers
   * rather than one long-lived signal combined into each request: AbortSignal.any() retains its
   * dependants on a long-lived input signal (nodejs/node#55351), which would grow for months.
   */
  private readonly inFlight = new Set<AbortController>();
  private closed = false;

  constructor(connection: EtcdConnection) {
    this.transport = new EtcdTransport(connection);
  }

  /** The highest store revision seen in any response header, or null before the first response. */
  get lastSeenRevision(): string | null {
    return this.highestRevision;
  }

  /** Reads one key, or every key under a prefix when `prefix` is set. */
  async range(key: string, options: RangeOptions, timeoutMs: number): Promise<RangeResult> {
    const response = await this.call<RawRangeResponse>('/v3/kv/range', rangeRequestBody(key, options), timeoutMs);
    return {
      revision: response.header.revision,
      kvs: (response.kvs ?? []).map(decodeKeyValue),
      count: Number(response.count ?? 0),
    };
  }

  async put(key: string, value: string, options: { lease?: string }, timeoutMs: number): Promise<{ revision: string }> {
    const response = await this.call<RawResponse>('/v3/kv/put', putRequestBody(key, value, options.lease), timeoutMs);
    return { revision: response.header.revision };
  }

  async deleteRange(
    key: string,
    options: { prefix?: boolean; rangeEnd?: string },
    timeoutMs: number,
  ): Promise<{ revision: string; deleted: number }> {
    const response = await this.call<RawResponse & { deleted?: string }>(
      '/v3/kv/deleterange',
      deleteRequestBody(key, options.prefix, options.rangeEnd),
      timeoutMs,
    );
    return { revision: response.header.revision, deleted: Number(response.deleted ?? 0) };
  }

  /**
   * Runs `compare` atomically and then `success` or `failure`. `responses` holds one entry per
   * executed operation: the key-values for a range, nothing for put/delete.
   */
  async txn(request: TxnRequest, timeoutMs: number): Promise<TxnResult> {
    const body = {
      compare: request.compare.map(compareToJson),
      success: (request.success ?? []).map(operationToJson),
      failure: (request.failure ?? []).map(operationToJson),
    };
    const response = await this.call<RawTxnResponse>('/v3/kv/txn', body, timeoutMs);
    return {
      succeeded: response.succeeded === true,
      revision: response.header.revision,
      responses: (response.responses ?? []).map((op) => ({ kvs: (op.response_range?.kvs ?? []).map(decodeKeyValue) })),
    };
  }

  async leaseGrant(ttlSeconds: number, timeoutMs: number): Promise<{ id: string; ttlSeconds: number }> {
    const response = await this.call<RawResponse & { ID: string; TTL: string; error?: string }>(
      '/v3/lease/grant',
      { TTL: ttlSeconds },
      timeoutMs,
    );
    if (response.error) throw new EtcdRequestError(`lease grant: ${response.error}`, null, null);
    return { id: response.ID, ttlSeconds: Number(response.TTL) };
  }

  /**
   * One keepalive round trip. Resolves with the remaining TTL in seconds; 0 means the lease no
   * longer exists (expired or revoked) and has to be granted again.
   */
  async leaseKeepAlive(leaseId: string, timeoutMs: number): Promise<number> {
    const response = await this.call<{ result?: RawResponse & { TTL?: string }; error?: RawError }>(
      '/v3/lease/keepalive',
      { ID: leaseId },
      timeoutMs,
    );
    if (response.error) throw gatewayError(response.error, null);
    if (response.result) this.noteRevision(response.result.header?.revision);
    return Number(response.result?.TTL ?? 0);
  }

  /** Revokes a lease, deleting every key attached to it. An unknown lease is not an error. */
  async leaseRevoke(leaseId: string, timeoutMs: number): Promise<void> {
    try {
      await this.call<RawResponse>('/v3/lease/revoke', { ID: leaseId }, timeoutMs);
    } catch (error) {
      if (!(error instanceof EtcdRequestError && error.grpcCode === GRPC_NOT_FOUND)) throw error;
    }
  }

  /**
   * Streams changes of a key or prefix from `startRevision` (inclusive).
   *
   * The first emission is the `created` response once the server has registered the watch; it
   * must arrive within `connectTimeoutMs`. After that the stream has no deadline. The observable
   * never completes: a cancelled or compacted watch, the end of the stream or a network failure
   * all end it with a WatchBrokenError, after which the caller re-reads and watches again.
   * Unsubscribing aborts the HTTP stream.
   */
  watch(key: string, options: { prefix?: boolean; startRevision: string }, connectTimeoutMs: number): Observable<WatchResponse> {
    return new Observable<WatchResponse>((subscriber) => {
      const stream = new AbortController();
      const signal = stream.signal;
      let unsubscribed = false;
      this.inFlight.add(stream);
      if (this.closed) stream.abort(new WatchBrokenError('etcd client closed'));
      const connectDeadline = setTimeout(
        () => stream.abort(new WatchBrokenError(`watch not created within ${connectTimeoutMs} ms`)),
        connectTimeoutMs,
      );
      const body = {
        create_request: { ...rangeBounds(key, options.prefix), start_revision: options.startRevision },
      };
      const consume = async (): Promise<never> => {
        const response = await this.send('/v3/watch', body, signal);
        if (!response.ok || !response.body) throw await responseError(response);
        for await (const message of readJsonLines(response.body)) {
          const { result, error } = message as { result?: RawWatchResult; error?: RawError };
          if (error) throw new WatchBrokenError(`watch error: ${error.message ?? error.error}`);
          if (!result) continue;
          const compactedTo = result.compact_revision && result.compact_revision !== '0' ? result.compact_revision : null;
          if (result.canceled || compactedTo) {
            throw new WatchBrokenError(`watch cancelled${result.cancel_reason ? `: ${result.cancel_reason}` : ''}`, compactedTo);
          }
          if (result.created) clearTimeout(connectDeadline);
          this.noteRevision(result.header?.revision);
          subscriber.next({
            created: result.created === true,
            revision: result.header?.revision ?? '0',
            events: (result.events ?? []).map((event) => ({
              type: event.type === 'DELETE' ? 'delete' : 'put',
              kv: decodeKeyValue(event.kv),
            })),
          });
        }
        throw new WatchBrokenError('watch stream ended');
      };
      consume().catch((error: unknown) => {
        clearTimeout(connectDeadline);
        this.inFlight.delete(stream);
        if (!unsubscribed) subscriber.error(asWatchBroken(signal.aborted ? signal.reason : error));
      });
      return () => {
        unsubscribed = true;
        clearTimeout(connectDeadline);
        this.inFlight.delete(stream);
        stream.abort();
      };
    });
  }

  /** Aborts every request and watch in flight; later calls fail at once. */
  close(): void {
    this.closed = true;
    for (const request of this.inFlight) request.abort(new EtcdUnavailableError('etcd client closed'));
    this.inFlight.clear();
    this.transport.close();
  }

  /**
   * POSTs to the gateway with an overall deadline (connect, answer and body) and parses the JSON
   * answer.
   *
   * The deadline is an own timer that aborts the request's controller, not
   * `AbortSignal.any([AbortSignal.timeout(ms), ...])`: Node (20 at least) holds a timeout signal
   * that only feeds AbortSignal.any() through a weak reference, so a major GC while the request
   * waits collects it together with its timer, and a request to a frozen etcd then never ends
   * (nodejs/node#57736). The timer closes over the controller, so nothing here is weakly held.
   */
  private async call<T extends object>(path: string, body: unknown, timeoutMs: number): Promise<T> {
    if (this.closed) throw new EtcdUnavailableError('etcd client closed');
    const request = new AbortController();
    this.inFlight.add(request);
    const deadline = setTimeout(
      () => request.abort(new EtcdUnavailableError(`etcd ${path}: no answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const signal = request.signal;
    try {
      const response = await this.send(path, body, signal);
      if (!response.ok) throw await responseError(response);
      const parsed = parseGatewayAnswer<T & { header?: { revision?: string } }>(await response.text(), path, response.status);
      this.noteRevision(parsed.header?.revision);
      return parsed;
    } catch (error) {
      if (signal.aborted) throw abortError(signal.reason, path, timeoutMs);
      throw error;
    } finally {
      clearTimeout(deadline);
      this.inFlight.delete(request);
    }
  }

  /** Sends one request; unreachable hosts and a refused user become this client's errors. */
  private async send(path: string, body: unknown, signal: AbortSignal): Promise<Response> {
    try {
      return await this.transport.send(path, body, signal);
    } catch (error) {
      if (error instanceof EtcdHostsUnreachable) throw new EtcdUnavailableError(error.message);
      if (error instanceof EtcdAuthenticationError) throw new EtcdRequestError(error.message, GRPC_UNAUTHENTICATED, 401);
      throw error;
    }
  }

  private noteRevision(revision: string | undefined): void {
    if (revision && (this.highestRevision === null || compareRevisions(revision, this.highestRevision) > 0)) {
      this.highestRevision = revision;
    }
  }
}

export interface KeyValue {
  key: string;
  value: string;
  createRevision: string;
  modRevision: string;
  version: string;
  /** Lease id, '0' when the key has none. */
  lease: string;
}

export interface RangeOptions {
  prefix?: boolean;
  /** Only the count and header are returned. */
  countOnly?: boolean;
  /** Exclusive end key for a key range, instead of `prefix`. */
  rangeEnd?: string;
}

export interface RangeResult {
  revision: string;
  kvs: KeyValue[];
  count: number;
}

/** One comparison of a txn. `result` defaults to equality. */
export type TxnCompare = { key: string; result?: 'EQUAL' | 'GREATER' | 'LESS' | 'NOT_EQUAL' } & (
  | { target: 'CREATE'; createRevision: string }
  | { target: 'MOD'; modRevision: string }
  | { target: 'VALUE'; value: string }
  | { target: 'LEASE'; lease: string }
);

export type TxnOperation =
  | { put: { key: string; value: string; lease?: string } }
  | { deleteRange: { key: string; prefix?: boolean } }
  | { range: { key: string; prefix?: boolean } };

export interface TxnRequest {
  compare: TxnCompare[];
  success?: TxnOperation[];
  failure?: TxnOperation[];
}

export interface TxnResult {
  succeeded: boolean;
  revision: string;
  /** One entry per executed operation of the branch taken; `kvs` is filled for range operations. */
  responses: { kvs: KeyValue[] }[];
}

export interface WatchEvent {
  type: 'put' | 'delete';
  /** For a delete only key and modRevision are meaningful. */
  kv: KeyValue;
}

export interface WatchResponse {
  /** True for the first response, when the server has registered the watch. */
  created: boolean;
  revision: string;
  events: WatchEvent[];
}

/** Base class of every failure of EtcdClient. */
export class EtcdError extends Error {
  override readonly name: string = 'EtcdError';
}

/**
 * No host accepted the connection, the deadline passed, or the client was closed.
 * The request may or may not have been applied.
 */
export class EtcdUnavailableError extends EtcdError {
  override readonly name: string = 'EtcdUnavailableError';
}

/** The server answered with an error (gRPC status code from the gateway, when it gave one). */
export class EtcdRequestError extends EtcdError {
  override readonly name: string = 'EtcdRequestError';
  constructor(
    message: string,
    readonly grpcCode: number | null,
    readonly httpStatus: number | null,
  ) {
    super(message);
  }

  /** The lease used in a put no longer exists. */
  get isLeaseNotFound(): boolean {
    return this.grpcCode === GRPC_NOT_FOUND && /lease not found/.test(this.message);
  }

  /** Transient server-side conditions (no leader, leader changed, server timeout, overload). */
  get isTransient(): boolean {
    return (
      this.grpcCode === GRPC_UNAVAILABLE ||
      this.grpcCode === GRPC_DEADLINE_EXCEEDED ||
      this.grpcCode === GRPC_RESOURCE_EXHAUSTED ||
      this.grpcCode === GRPC_ABORTED ||
      this.httpStatus === 503
    );
  }
}

/** A watch stream ended; the caller has to re-read and watch again. */
export class WatchBrokenError extends EtcdError {
  override readonly name: string = 'WatchBrokenError';
  constructor(
    message: string,
    /** Set when the start revision had been compacted: the oldest revision still available. */
    readonly compactRevision: string | null = null,
  ) {
    super(message);
  }
}

/**
 * Consumes a watch until `stop` fires (resolves) or the watch breaks (rejects with the
 * WatchBrokenError), handing every response to `onResponse`. For follow-loops that re-read and
 * watch again after a break.
 */
export function watchUntilBroken(
  watch: Observable<WatchResponse>,
  stop: AbortSignal,
  onResponse: (response: WatchResponse) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const onStop = () => {
      subscription.unsubscribe();
      resolve();
    };
    const subscription = watch.subscribe({
      next: onResponse,
      error: (error: unknown) => {
        stop.removeEventListener('abort', onStop);
        reject(error);
      },
    });
    if (stop.aborted) onStop();
    else stop.addEventListener('abort', onStop, { once: true });
  });
}

/** Negative, zero or positive as revision `a` is lower, equal or higher than `b`. */
export function compareRevisions(a: string, b: string): number {
  const difference = BigInt(a) - BigInt(b);
  return difference === 0n ? 0 : difference < 0n ? -1 : 1;
}

export function nextRevision(revision: string): string {
  return (BigInt(revision) + 1n).toString();
}

/** The exclusive end of the key range that holds every key starting with `prefix`. */
function prefixRangeEnd(prefix: string): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] < 0xff) {
      end[i]++;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]); // every key
}

const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_NOT_FOUND = 5;
const GRPC_RESOURCE_EXHAUSTED = 8;
const GRPC_ABORTED = 10;
const GRPC_UNAVAILABLE = 14;
const GRPC_UNAUTHENTICATED = 16;

interface RawResponse {
  header: { revision: string };
}
interface RawKeyValue {
  key: string;
  value?: string;
  create_revision?: string;
  mod_revision?: string;
  version?: string;
  lease?: string;
}
interface RawRangeResponse extends RawResponse {
  kvs?: RawKeyValue[];
  count?: string;
}
interface RawTxnResponse extends RawResponse {
  succeeded?: boolean;
  responses?: { response_range?: { kvs?: RawKeyValue[] } }[];
}
interface RawWatchResult {
  header?: { revision?: string };
  created?: boolean;
  canceled?: boolean;
  cancel_reason?: string;
  compact_revision?: string;
  events?: { type?: 'PUT' | 'DELETE'; kv: RawKeyValue }[];
}
interface RawError {
  error?: string;
  message?: string;
  code?: number;
}

const base64 = (text: string | Buffer): string => Buffer.from(text).toString('base64');
const fromBase64 = (text: string | undefined): string => Buffer.from(text ?? '', 'base64').toString('utf8');

function decodeKeyValue(kv: RawKeyValue): KeyValue {
  return {
    key: fromBase64(kv.key),
    value: fromBase64(kv.value),
    createRevision: kv.create_revision ?? '0',
    modRevision: kv.mod_revision ?? '0',
    version: kv.version ?? '0',
    lease: kv.lease ?? '0',
  };
}

function rangeBounds(key: string, prefix: boolean | undefined, rangeEnd?: string): { key: string; range_end?: string } {
  if (rangeEnd !== undefined) return { key: base64(key), range_end: base64(rangeEnd) };
  return prefix ? { key: base64(key), range_end: base64(prefixRangeEnd(key)) } : { key: base64(key) };
}

function rangeRequestBody(key: string, options: RangeOptions) {
  return {
    ...rangeBounds(key, options.prefix, options.rangeEnd),
    ...(options.countOnly ? { count_only: true } : {}),
  };
}

function putRequestBody(key: string, value: string, lease: string | undefined) {
  return { key: base64(key), value: base64(value), ...(lease && lease !== '0' ? { lease } : {}) };
}

function deleteRequestBody(key: string, prefix: boolean | undefined, rangeEnd?: string) {
  return rangeBounds(key, prefix, rangeEnd);
}

function compareToJson(compare: TxnCompare) {
  const common = { key: base64(compare.key), target: compare.target, result: compare.result ?? 'EQUAL' };
  switch (compare.target) {
    case 'CREATE':
      return { ...common, create_revision: compare.createRevision };
    case 'MOD':
      return { ...common, mod_revision: compare.modRevision };
    case 'VALUE':
      return { ...common, value: base64(compare.value) };
    case 'LEASE':
      return { ...common, lease: compare.lease };
  }
}

function operationToJson(operation: TxnOperation) {
  if ('put' in operation) {
    return { request_put: putRequestBody(operation.put.key, operation.put.value, operation.put.lease) };
  }
  if ('deleteRange' in operation) {
    return { request_delete_range: deleteRequestBody(operation.deleteRange.key, operation.deleteRange.prefix) };
  }
  return { request_range: rangeBounds(operation.range.key, operation.range.prefix) };
}

/** Splits a gateway stream into its newline-delimited JSON messages. */
async function* readJsonLines(body: ReadableStream<Uint8Array>): AsyncGenerator<unknown> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline).trim();
      buffered = buffered.slice(newline + 1);
      if (line) yield JSON.parse(line);
    }
  }
  const rest = buffered.trim();
  if (rest) yield JSON.parse(rest);
}

/** The gateway's JSON answer; a plain-text one (some refusals are) becomes an error that says what it means. */
function parseGatewayAnswer<T>(text: string, path: string, status: number): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new EtcdRequestError(explainPlainAnswer(text, path), null, status);
  }
}

async function responseError(response: Response): Promise<EtcdRequestError> {
  const text = await response.text().catch(() => '');
  let parsed: RawError = {};
  try {
    parsed = JSON.parse(text) as RawError;
  } catch {
    // not JSON: keep the raw text in the message
  }
  return gatewayError({ ...parsed, message: parsed.message ?? (text || response.statusText) }, response.status);
}

function gatewayError(error: RawError, httpStatus: number | null): EtcdRequestError {
  return new EtcdRequestError(
    `etcd: ${error.message ?? error.error ?? 'unknown error'}${httpStatus ? ` (HTTP ${httpStatus})` : ''}`,
    typeof error.code === 'number' ? error.code : null,
    httpStatus,
  );
}

function abortError(reason: unknown, path: string, timeoutMs: number): EtcdError {
  if (reason instanceof EtcdError) return reason;
  if (reason instanceof DOMException && reason.name === 'TimeoutError') {
    return new EtcdUnavailableError(`etcd ${path}: no answer within ${timeoutMs} ms`);
  }
  return new EtcdUnavailableError(`etcd ${path}: aborted (${errorText(reason)})`);
}

function asWatchBroken(error: unknown): WatchBrokenError {
  return error instanceof WatchBrokenError ? error : new WatchBrokenError(`watch failed: ${errorText(error)}`);
}

function errorText(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as Error & { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message}: ${cause.message}` : error.message;
  }
  return String(error);
}
