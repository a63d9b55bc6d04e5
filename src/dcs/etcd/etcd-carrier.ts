import type { EtcdAnswer } from './etcd-answer';

/** TLS material for etcd's client port, read from the `etcd3` section's PEM files. */
export interface EtcdTls {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
}

/**
 * How requests reach one etcd host: etcd's JSON gateway over HTTP/1.1, or etcd's gRPC API. Either
 * answers with the gateway's JSON (HTTP status, base64 bytes, decimal int64, enum names), so the
 * client above reads both the same way. A failed connection throws; an etcd error is an answer.
 */
export interface EtcdCarrier {
  request(url: string, path: string, body: unknown, signal: AbortSignal, token: string | null): Promise<EtcdAnswer>;
  close(): void;
}
