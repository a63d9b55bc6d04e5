import { performance } from 'node:perf_hooks';
import { Observable } from 'rxjs';
import { isSuccess, type EtcdAnswer } from './etcd-answer';
import { EtcdAuthenticationError, EtcdConnection, EtcdHostsUnreachable, EtcdTransport } from './etcd-transport';
import {
  compareRevisions,
  EtcdNoAnswerError,
  EtcdRequestError,
  EtcdUnavailableError,
  GRPC_NOT_FOUND,
  GRPC_UNAUTHENTICATED,
  isTransient,
  RangeOptions,
  RangeResult,
  TxnRequest,
  TxnResult,
  WatchBrokenError,
  WatchResponse,
  WatchSilentError,
} from './etcd-types';
import {
  abortError,
  asWatchBroken,
  compareToJson,
  decodeKeyValue,
  deleteRequestBody,
  gatewayError,
  operationToJson,
  parseGatewayAnswer,
  putRequestBody,
  rangeBounds,
  rangeRequestBody,
  RawError,
  RawRangeResponse,
  RawResponse,
  RawTxnResponse,
  RawWatchResult,
  readJsonLines,
  responseError,
} from './etcd-wire';

/**
 * How long a watch may stay silent before it is resumed on a fresh connection (see `watch`): the
 * backstop for a connection that died unnoticed while this client sent nothing else. A failed
 * request ends the watches at once; the cluster's watch needs no backstop (ClusterWatch).
 */
export const WATCH_IDLE_RESTART_MS = 60_000;

/**
 * A thin etcd v3 client over etcd's gRPC-JSON gateway (HTTP/1.1, JSON, base64 keys and values),
 * built on Node's HTTP client; over TLS and with an RBAC user when configured (see EtcdTransport).
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
  /** The open watches' streams, ended when a request cannot reach etcd (see watch). */
  private readonly openWatches = new Set<AbortController>();
  private readonly failureListeners = new Set<() => void>();
  private closed = false;
  /**
   * A request that got no answer says etcd is unreachable only if it waited at least this long. One cut short by
   * what its HA cycle had left of retry_timeout says nothing of etcd: ending every watch for it would make the next
   * cycles read the whole cluster from etcd, more load exactly while etcd is slow. 0: every no-answer counts.
   */
  noAnswerCountsFromMs = 0;
  private lastAnswerTookMs = 0;

  constructor(connection: EtcdConnection) {
    this.transport = new EtcdTransport(connection);
  }

  /**
   * How long etcd took to answer the last answered request, in ms (0 before the first). On a slow link a request given
   * less time than that will most likely be aborted unanswered, and an aborted request costs its connection: the next
   * one opens a new connection, a round trip more. The last answer, not an average: a link that just slowed down must
   * count at once (measured with a 1 s one-way delay: the cycle's second request, sent on the strength of the earlier
   * fast answers, was aborted, and the next cycle's keepalive paid for a new connection and lost the leader key).
   */
  get lastAnswerMs(): number {
    return this.lastAnswerTookMs;
  }

  /** The highest store revision seen in any response header, or null before the first response. */
  get lastSeenRevision(): string | null {
    return this.highestRevision;
  }

  /** Calls `listener` whenever a request fails to reach etcd (see watch); returns the way to stop. */
  onRequestFailed(listener: () => void): () => void {
    this.failureListeners.add(listener);
    return () => this.failureListeners.delete(listener);
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

  /** The answering member's database size in bytes: as allocated on disk (what etcd's quota counts), and in use. */
  async status(timeoutMs: number): Promise<{ dbSize: number; dbSizeInUse: number }> {
    const response = await this.call<RawResponse & { dbSize?: string; dbSizeInUse?: string }>(
      '/v3/maintenance/status',
      {},
      timeoutMs,
    );
    return { dbSize: Number(response.dbSize ?? 0), dbSizeInUse: Number(response.dbSizeInUse ?? 0) };
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
   * must arrive within `connectTimeoutMs`. After that, a stream silent for `restartWhenSilentMs`
   * (default WATCH_IDLE_RESTART_MS; null: never) is ended too: across a network partition its TCP
   * connection neither fails nor delivers (no RST comes back, and after the heal the retransmission
   * backoff can hold it for tens of seconds), and the caller resumes from its last revision on a
   * fresh connection. The same happens at once when a request of this client fails to reach etcd:
   * the watch's connection may be just as dead. Watches require an etcd leader: a member cut off
   * from its cluster ends them ("no leader") instead of leaving them silent. The observable
   * never completes: a cancelled or compacted watch, the end of the stream or a network failure
   * all end it with a WatchBrokenError, after which the caller re-reads and watches again.
   * Unsubscribing aborts the HTTP stream.
   */
  watch(
    key: string,
    options: { prefix?: boolean; startRevision: string; restartWhenSilentMs?: number | null },
    connectTimeoutMs: number,
  ): Observable<WatchResponse> {
    const silenceMs = options.restartWhenSilentMs === undefined ? WATCH_IDLE_RESTART_MS : options.restartWhenSilentMs;
    return new Observable<WatchResponse>((subscriber) => {
      const stream = new AbortController();
      const signal = stream.signal;
      let unsubscribed = false;
      this.inFlight.add(stream);
      this.openWatches.add(stream);
      if (this.closed) stream.abort(new WatchBrokenError('etcd client closed'));
      const connectDeadline = setTimeout(
        () => stream.abort(new WatchBrokenError(`watch not created within ${connectTimeoutMs} ms`)),
        connectTimeoutMs,
      );
      const body = {
        create_request: { ...rangeBounds(key, options.prefix), start_revision: options.startRevision },
      };
      let silence: NodeJS.Timeout | undefined;
      const restartWhenSilent = () => {
        if (silenceMs === null) return;
        clearTimeout(silence);
        silence = setTimeout(
          () => stream.abort(new WatchSilentError(`watch silent for ${silenceMs} ms: resuming on a fresh connection`)),
          silenceMs,
        );
      };
      const consume = async (): Promise<never> => {
        const response = await this.send('/v3/watch', body, signal);
        if (!isSuccess(response)) throw await responseError(response);
        for await (const message of readJsonLines(response.chunks())) {
          const { result, error } = message as { result?: RawWatchResult; error?: RawError };
          if (error) throw new WatchBrokenError(`watch error: ${error.message ?? error.error}`);
          if (!result) continue;
          const compactedTo =
            result.compact_revision && result.compact_revision !== '0' ? result.compact_revision : null;
          if (result.canceled || compactedTo) {
            throw new WatchBrokenError(
              `watch cancelled${result.cancel_reason ? `: ${result.cancel_reason}` : ''}`,
              compactedTo,
            );
          }
          if (result.created) clearTimeout(connectDeadline);
          restartWhenSilent();
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
        clearTimeout(silence);
        this.inFlight.delete(stream);
        this.openWatches.delete(stream);
        if (!unsubscribed) subscriber.error(asWatchBroken(signal.aborted ? signal.reason : error));
      });
      return () => {
        unsubscribed = true;
        clearTimeout(connectDeadline);
        clearTimeout(silence);
        this.inFlight.delete(stream);
        this.openWatches.delete(stream);
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
      () => request.abort(new EtcdNoAnswerError(`etcd ${path}: no answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const signal = request.signal;
    const sentAt = performance.now();
    try {
      const response = await this.send(path, body, signal);
      if (!isSuccess(response)) throw await responseError(response);
      const parsed = parseGatewayAnswer<T & { header?: { revision?: string } }>(
        await response.text(),
        path,
        response.status,
      );
      this.noteRevision(parsed.header?.revision);
      this.lastAnswerTookMs = performance.now() - sentAt;
      return parsed;
    } catch (error) {
      const failure = signal.aborted ? abortError(signal.reason, path, timeoutMs) : error;
      const cutShort = failure instanceof EtcdNoAnswerError && timeoutMs < this.noAnswerCountsFromMs;
      if (isTransient(failure) && !this.closed && !cutShort) this.requestFailed(path);
      throw failure;
    } finally {
      clearTimeout(deadline);
      this.inFlight.delete(request);
    }
  }

  /** Sends one request; unreachable hosts and a refused user become this client's errors. */
  private async send(path: string, body: unknown, signal: AbortSignal): Promise<EtcdAnswer> {
    try {
      return await this.transport.send(path, body, signal);
    } catch (error) {
      if (error instanceof EtcdHostsUnreachable) throw new EtcdUnavailableError(error.message);
      if (error instanceof EtcdAuthenticationError)
        throw new EtcdRequestError(error.message, GRPC_UNAUTHENTICATED, 401);
      throw error;
    }
  }

  /** A request could not reach etcd: the open watches resume on fresh connections, and the listeners hear it. */
  private requestFailed(path: string): void {
    for (const watch of [...this.openWatches])
      watch.abort(new WatchSilentError(`etcd ${path} failed: resuming the watch on a fresh connection`));
    for (const listener of [...this.failureListeners]) listener();
  }

  private noteRevision(revision: string | undefined): void {
    if (revision && (this.highestRevision === null || compareRevisions(revision, this.highestRevision) > 0)) {
      this.highestRevision = revision;
    }
  }
}

export * from './etcd-types';
