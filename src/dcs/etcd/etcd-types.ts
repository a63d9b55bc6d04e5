/** The etcd client's vocabulary: results, errors and revisions, shared by its callers. */
import { Observable } from 'rxjs';

/** gRPC status codes etcd's gateway reports. */
export const GRPC_DEADLINE_EXCEEDED = 4;
export const GRPC_NOT_FOUND = 5;
export const GRPC_RESOURCE_EXHAUSTED = 8;
export const GRPC_ABORTED = 10;
export const GRPC_UNAVAILABLE = 14;
export const GRPC_UNAUTHENTICATED = 16;

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
  /** Keys without their values. */
  keysOnly?: boolean;
  /** Only keys last modified at this revision or later (etcd filters the kvs, not the count). */
  minModRevision?: string;
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

/** The compare of a compare-and-set: a revision, or `'absent'` when the key must not exist. */
export function revisionIs(key: string, expected: string | 'absent'): TxnCompare {
  return expected === 'absent'
    ? { key, target: 'CREATE', createRevision: '0' }
    : { key, target: 'MOD', modRevision: expected };
}

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

/** A request's deadline passed without an answer: says less than a refusal does (see retryTransient). */
export class EtcdNoAnswerError extends EtcdUnavailableError {
  override readonly name: string = 'EtcdNoAnswerError';
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

/** A watch ended by its client after a silence (see `EtcdClient.watch`): nothing was missed, resume where it was. */
export class WatchSilentError extends WatchBrokenError {
  override readonly name: string = 'WatchSilentError';
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

/** `promise`, or an EtcdUnavailableError once `timeoutMs` has passed (the promise itself runs on). */
export function withinDeadline<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new EtcdNoAnswerError(`etcd ${what}: no answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** Whether a retry may succeed where this attempt failed. */
export function isTransient(error: unknown): boolean {
  return error instanceof EtcdUnavailableError || (error instanceof EtcdRequestError && error.isTransient);
}
