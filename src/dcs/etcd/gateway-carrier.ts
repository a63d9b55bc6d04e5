import { Agent, fetch, Response } from 'undici';
import type { EtcdCarrier } from './etcd-transport';

/** TLS material for etcd's client port, read from the `etcd3` section's PEM files. */
export interface EtcdTls {
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
}

/** Requests as JSON POSTs to etcd's gRPC-JSON gateway, on undici (TLS client certificates). */
export class GatewayCarrier implements EtcdCarrier {
  private readonly dispatcher: Agent;

  constructor(tls: EtcdTls | null) {
    this.dispatcher = new Agent({
      connect: tls ?? {},
      // The gateway's watch streams stay open without traffic; the deadlines are the callers'.
      bodyTimeout: 0,
      headersTimeout: 0,
    });
  }

  request(url: string, path: string, body: unknown, signal: AbortSignal, token: string | null): Promise<Response> {
    return fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: token } : {}) },
      body: JSON.stringify(body),
      signal,
      dispatcher: this.dispatcher,
    });
  }

  close(): void {
    void this.dispatcher.close().catch(() => undefined);
  }
}
