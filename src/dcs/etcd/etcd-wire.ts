import { errorText } from '../../common/error-text';
import type { EtcdAnswer } from './etcd-answer';
import {
  EtcdError,
  EtcdNoAnswerError,
  EtcdRequestError,
  EtcdUnavailableError,
  KeyValue,
  RangeOptions,
  TxnCompare,
  TxnOperation,
  WatchBrokenError,
} from './etcd-types';
import { explainPlainAnswer } from './etcd-transport';

/** The gateway's JSON wire format: request bodies, base64 keys and values, answers and their errors. */
export function prefixRangeEnd(prefix: string): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] < 0xff) {
      end[i]++;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]); // every key
}

export interface RawResponse {
  header: { revision: string };
}
export interface RawKeyValue {
  key: string;
  value?: string;
  create_revision?: string;
  mod_revision?: string;
  version?: string;
  lease?: string;
}
export interface RawRangeResponse extends RawResponse {
  kvs?: RawKeyValue[];
  count?: string;
}
export interface RawTxnResponse extends RawResponse {
  succeeded?: boolean;
  responses?: { response_range?: { kvs?: RawKeyValue[] } }[];
}
export interface RawWatchResult {
  header?: { revision?: string };
  created?: boolean;
  canceled?: boolean;
  cancel_reason?: string;
  compact_revision?: string;
  events?: { type?: 'PUT' | 'DELETE'; kv: RawKeyValue }[];
}
export interface RawError {
  error?: string;
  message?: string;
  code?: number;
}

export const base64 = (text: string | Buffer): string => Buffer.from(text).toString('base64');
export const fromBase64 = (text: string | undefined): string => Buffer.from(text ?? '', 'base64').toString('utf8');

export function decodeKeyValue(kv: RawKeyValue): KeyValue {
  return {
    key: fromBase64(kv.key),
    value: fromBase64(kv.value),
    createRevision: kv.create_revision ?? '0',
    modRevision: kv.mod_revision ?? '0',
    version: kv.version ?? '0',
    lease: kv.lease ?? '0',
  };
}

export function rangeBounds(
  key: string,
  prefix: boolean | undefined,
  rangeEnd?: string,
): { key: string; range_end?: string } {
  if (rangeEnd !== undefined) return { key: base64(key), range_end: base64(rangeEnd) };
  return prefix ? { key: base64(key), range_end: base64(prefixRangeEnd(key)) } : { key: base64(key) };
}

export function rangeRequestBody(key: string, options: RangeOptions) {
  return {
    ...rangeBounds(key, options.prefix, options.rangeEnd),
    ...(options.countOnly ? { count_only: true } : {}),
    ...(options.keysOnly ? { keys_only: true } : {}),
    ...(options.minModRevision !== undefined ? { min_mod_revision: options.minModRevision } : {}),
  };
}

export function putRequestBody(key: string, value: string, lease: string | undefined) {
  return { key: base64(key), value: base64(value), ...(lease && lease !== '0' ? { lease } : {}) };
}

export function deleteRequestBody(key: string, prefix: boolean | undefined, rangeEnd?: string) {
  return rangeBounds(key, prefix, rangeEnd);
}

export function compareToJson(compare: TxnCompare) {
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

export function operationToJson(operation: TxnOperation) {
  if ('put' in operation) {
    return { request_put: putRequestBody(operation.put.key, operation.put.value, operation.put.lease) };
  }
  if ('deleteRange' in operation) {
    return { request_delete_range: deleteRequestBody(operation.deleteRange.key, operation.deleteRange.prefix) };
  }
  return { request_range: rangeBounds(operation.range.key, operation.range.prefix) };
}

/** Splits a gateway stream into its newline-delimited JSON messages. */
export async function* readJsonLines(body: AsyncIterable<Uint8Array>): AsyncGenerator<unknown> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of body) {
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
export function parseGatewayAnswer<T>(text: string, path: string, status: number): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new EtcdRequestError(explainPlainAnswer(text, path), null, status);
  }
}

export async function responseError(response: EtcdAnswer): Promise<EtcdRequestError> {
  const text = await response.text().catch(() => '');
  let parsed: RawError = {};
  try {
    parsed = JSON.parse(text) as RawError;
  } catch {
    // not JSON: keep the raw text in the message
  }
  return gatewayError({ ...parsed, message: parsed.message ?? (text || `HTTP ${response.status}`) }, response.status);
}

export function gatewayError(error: RawError, httpStatus: number | null): EtcdRequestError {
  return new EtcdRequestError(
    `etcd: ${error.message ?? error.error ?? 'unknown error'}${httpStatus ? ` (HTTP ${httpStatus})` : ''}`,
    typeof error.code === 'number' ? error.code : null,
    httpStatus,
  );
}

export function abortError(reason: unknown, path: string, timeoutMs: number): EtcdError {
  if (reason instanceof EtcdError) return reason;
  if (reason instanceof DOMException && reason.name === 'TimeoutError') {
    return new EtcdNoAnswerError(`etcd ${path}: no answer within ${timeoutMs} ms`);
  }
  return new EtcdUnavailableError(`etcd ${path}: aborted (${errorText(reason)})`);
}

export function asWatchBroken(error: unknown): WatchBrokenError {
  return error instanceof WatchBrokenError ? error : new WatchBrokenError(`watch failed: ${errorText(error)}`);
}
