import { isIP } from 'node:net';
import { checkServerIdentity } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import { fromJSON } from '@grpc/proto-loader';
import { ETCD_GRPC_SCHEMA } from './etcd-grpc-schema';
import { jsonAnswer, streamAnswer, type EtcdAnswer } from './etcd-answer';
import type { EtcdCarrier, EtcdTls } from './etcd-carrier';

/** Messages as the gateway writes them: field names as in the proto, int64 as decimal strings, bytes as base64. */
const definition = fromJSON(ETCD_GRPC_SCHEMA, {
  keepCase: true,
  longs: String,
  enums: String,
  bytes: String,
  defaults: false,
  oneofs: false,
});

type Method = grpc.MethodDefinition<object, object>;
const method = (service: string, name: string) =>
  (definition[`etcdserverpb.${service}`] as grpc.ServiceDefinition)[name] as Method;

/** The gateway's paths that Stator calls, and etcd's gRPC methods behind them. */
const UNARY: Record<string, Method> = {
  '/v3/kv/range': method('KV', 'Range'),
  '/v3/kv/put': method('KV', 'Put'),
  '/v3/kv/deleterange': method('KV', 'DeleteRange'),
  '/v3/kv/txn': method('KV', 'Txn'),
  '/v3/lease/grant': method('Lease', 'LeaseGrant'),
  '/v3/lease/revoke': method('Lease', 'LeaseRevoke'),
  '/v3/auth/authenticate': method('Auth', 'Authenticate'),
  '/v3/maintenance/status': method('Maintenance', 'Status'),
};
const WATCH = method('Watch', 'Watch');
const KEEP_ALIVE = method('Lease', 'LeaseKeepAlive');

/** HTTP statuses the gateway gives gRPC codes (grpc-gateway's HTTPStatusFromCode). */
const HTTP_STATUS: Record<number, number> = {
  [grpc.status.CANCELLED]: 408,
  [grpc.status.INVALID_ARGUMENT]: 400,
  [grpc.status.DEADLINE_EXCEEDED]: 504,
  [grpc.status.NOT_FOUND]: 404,
  [grpc.status.ALREADY_EXISTS]: 409,
  [grpc.status.PERMISSION_DENIED]: 403,
  [grpc.status.UNAUTHENTICATED]: 401,
  [grpc.status.RESOURCE_EXHAUSTED]: 429,
  [grpc.status.FAILED_PRECONDITION]: 400,
  [grpc.status.ABORTED]: 409,
  [grpc.status.OUT_OF_RANGE]: 400,
  [grpc.status.UNIMPLEMENTED]: 501,
  [grpc.status.UNAVAILABLE]: 503,
};

/**
 * Requests over etcd's own gRPC API (HTTP/2), answered as the gateway would answer them: the one
 * way to present a client certificate together with a user's token, which the gateway refuses.
 * Every call is cancelled when the caller's deadline aborts it; nothing here retries or reconnects
 * on its own (gRPC's channel reconnects lazily, on the next call). UNAVAILABLE means this host
 * cannot serve now: the transport moves on to the next one.
 */
export class GrpcCarrier implements EtcdCarrier {
  private readonly clients = new Map<string, grpc.Client>();

  constructor(private readonly tls: EtcdTls | null) {}

  async request(
    url: string,
    path: string,
    body: unknown,
    signal: AbortSignal,
    token: string | null,
  ): Promise<EtcdAnswer> {
    const client = this.clientFor(url);
    const metadata = new grpc.Metadata();
    if (token) metadata.set('token', token);
    if (path === '/v3/watch') {
      // etcd ends the watch ("no leader") once its member loses the cluster's leader, instead of leaving it silent.
      metadata.set('hasleader', 'true');
      return stream(
        client.makeBidiStreamRequest(WATCH.path, WATCH.requestSerialize, WATCH.responseDeserialize, metadata),
        body,
        signal,
        'stream',
      );
    }
    if (path === '/v3/lease/keepalive') {
      return stream(
        client.makeBidiStreamRequest(
          KEEP_ALIVE.path,
          KEEP_ALIVE.requestSerialize,
          KEEP_ALIVE.responseDeserialize,
          metadata,
        ),
        body,
        signal,
        'first',
      );
    }
    const unary = UNARY[path];
    if (!unary) throw new Error(`etcd over gRPC: no method for ${path}`);
    return new Promise<EtcdAnswer>((resolve, reject) => {
      const call = client.makeUnaryRequest(
        unary.path,
        unary.requestSerialize,
        unary.responseDeserialize,
        body as object,
        metadata,
        (error, value) => {
          signal.removeEventListener('abort', cancel);
          if (signal.aborted) reject(signal.reason);
          else if (error) settleError(error, resolve, reject);
          else resolve(jsonAnswer(200, value));
        },
      );
      const cancel = () => call.cancel();
      signal.addEventListener('abort', cancel, { once: true });
    });
  }

  close(): void {
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }

  private clientFor(url: string): grpc.Client {
    let client = this.clients.get(url);
    if (!client) {
      const target = url.replace(/^https?:\/\//, '');
      // Pings find a dead connection under an idle watch; etcd accepts one every 5 s at most.
      const options: grpc.ChannelOptions = { 'grpc.keepalive_time_ms': 10_000, 'grpc.keepalive_timeout_ms': 5_000 };
      client = new grpc.Client(target, this.credentialsFor(target, options), options);
      this.clients.set(url, client);
    }
    return client;
  }

  /**
   * gRPC sends the host as the TLS server name, which Node refuses for an IP address (RFC 6066,
   * a deprecation warning on every connection). For an IP the name sent is a placeholder, and the
   * certificate is still checked against the IP itself.
   */
  private credentialsFor(target: string, options: grpc.ChannelOptions): grpc.ChannelCredentials {
    if (!this.tls) return grpc.credentials.createInsecure();
    const host = target.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');
    if (!isIP(host))
      return grpc.credentials.createSsl(this.tls.ca ?? null, this.tls.key ?? null, this.tls.cert ?? null);
    options['grpc.ssl_target_name_override'] = 'etcd';
    return grpc.credentials.createSsl(this.tls.ca ?? null, this.tls.key ?? null, this.tls.cert ?? null, {
      checkServerIdentity: (_placeholder, certificate) => checkServerIdentity(host, certificate),
    });
  }
}

/**
 * A bidirectional call: the request is written once; the answer is the first message (`first`,
 * a keepalive, as the gateway's `{"result": ...}`) or every message as the gateway's JSON lines
 * (`stream`, a watch). An error before the first message is the answer; after it, the last line.
 */
function stream(
  call: grpc.ClientDuplexStream<object, object>,
  body: unknown,
  signal: AbortSignal,
  shape: 'first' | 'stream',
): Promise<EtcdAnswer> {
  return new Promise<EtcdAnswer>((resolve, reject) => {
    let answered = false;
    let lines: ReadableStreamDefaultController<Uint8Array> | null = null;
    const cancel = () => call.cancel();
    signal.addEventListener('abort', cancel, { once: true });
    const done = () => signal.removeEventListener('abort', cancel);
    const emit = (message: unknown, end = false) => {
      try {
        lines?.enqueue(new TextEncoder().encode(`${JSON.stringify(message)}\n`));
        if (end) lines?.close();
      } catch {
        // the reader went away: the call is cancelled below
      }
    };
    call.on('data', (message: object) => {
      if (answered) return emit({ result: message });
      answered = true;
      if (shape === 'first') {
        done();
        call.cancel();
        return resolve(jsonAnswer(200, { result: message }));
      }
      const body = new ReadableStream<Uint8Array>({
        start: (controller) => {
          lines = controller;
        },
        cancel: () => call.cancel(),
      });
      resolve(streamAnswer(200, body));
      emit({ result: message });
    });
    call.on('error', (error: grpc.ServiceError) => {
      done();
      if (answered) return emit({ error: { code: error.code, message: error.details } }, true);
      answered = true;
      if (signal.aborted) reject(signal.reason);
      else settleError(error, resolve, reject);
    });
    call.on('end', () => {
      done();
      if (answered) return emit({ error: { message: 'etcd ended the stream' } }, true);
      answered = true;
      reject(new Error('etcd ended the stream without an answer'));
    });
    call.write(body as object);
  });
}

/** UNAVAILABLE: this host cannot serve (refused, TLS failed, no quorum): the transport tries the next. */
function settleError(
  error: grpc.ServiceError,
  resolve: (answer: EtcdAnswer) => void,
  reject: (error: Error) => void,
): void {
  if (error.code === grpc.status.UNAVAILABLE) reject(new Error(error.details || error.message));
  else
    resolve(
      jsonAnswer(HTTP_STATUS[error.code] ?? 500, { error: error.details, code: error.code, message: error.details }),
    );
}
