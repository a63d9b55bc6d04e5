import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server, Socket } from 'node:net';
import { Server as TlsServer } from 'node:tls';

/** Open connections a node keeps at most; far above what load balancers, probes and operators use. */
export const MAX_CONNECTIONS = 512;

export interface ConnectionGuardOptions {
  maxConnections: number;
  /** A connection that has not started a request this long after opening is closed (Node never times those out). */
  firstRequestTimeoutMs: number;
  /** From its first byte, a request's headers must have arrived within this (408, then close). */
  headersTimeoutMs: number;
  /** From its first byte, a whole request, body included, must have arrived within this (408, then close). */
  requestTimeoutMs: number;
  /** How often, while any connection is open, the deadlines are checked: a deadline fires at most this late. */
  checkIntervalMs: number;
}

/**
 * Where a connection's current request stands: `idleBytes` is what the socket had read when it began
 * waiting for it; `since`, when more than that was first seen; `request`, once its headers are read.
 */
interface Receiving {
  idleBytes: number;
  since: number | null;
  request: IncomingMessage | null;
}

/**
 * Caps the open connections at `maxConnections` without locking health checks out: when a new
 * connection would pass the cap, the oldest connection that has no request in progress (an idle
 * keep-alive connection, or one still dribbling its headers) is closed to make room. Only when every
 * connection is serving a request is the new one refused. Node's own `maxConnections` would refuse
 * new connections instead, so a client holding idle connections could keep HAProxy's checks out and
 * take the primary out of rotation.
 *
 * It also enforces the headers and request timeouts, which Node checks on a timer that runs for as
 * long as the server listens (four wake-ups a second at a 250 ms interval: most of an idle agent's
 * wake-ups). Here the timer runs only while a connection is open; the server's own checker is left
 * at an interval that never comes (see createHttpApp). A request past its deadline is answered as
 * Node answers it: `clientError` with ERR_HTTP_REQUEST_TIMEOUT.
 *
 * A request's first byte is seen on the socket's `bytesRead`, read by the checker: a `data` listener
 * would take the socket off Node's fast path (its HTTP parser then reads through JavaScript Buffers):
 * a third of the health-check throughput and several MiB of RSS under load. So a deadline counts
 * from the first check that saw the request's bytes: it fires up to two check intervals late, never early.
 */
export function guardConnections(server: Server, options: ConnectionGuardOptions): void {
  const { maxConnections, firstRequestTimeoutMs } = options;
  const open = new Set<Socket>();
  const serving = new Map<Socket, number>();
  const receiving = new Map<Socket, Receiving>();
  let checker: NodeJS.Timeout | null = null;

  const awaitNextRequest = (socket: Socket) =>
    receiving.set(socket, { idleBytes: socket.bytesRead, since: null, request: null });
  const checkDeadlines = () => {
    const now = performance.now();
    for (const [socket, state] of receiving) {
      const { since, request } = state;
      if (request?.complete) continue;
      if (since === null) {
        if (socket.bytesRead > state.idleBytes) state.since = now;
        continue;
      }
      const limit = request ? options.requestTimeoutMs : Math.min(options.headersTimeoutMs, options.requestTimeoutMs);
      if (now - since < limit) continue;
      receiving.delete(socket);
      const timeout = Object.assign(new Error('request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' });
      if (!server.emit('clientError', timeout, socket)) socket.destroy();
    }
  };

  // Over TLS, requests carry the decrypted socket, announced on 'secureConnection' (handshakes are bounded by handshakeTimeout).
  server.on(server instanceof TlsServer ? 'secureConnection' : 'connection', (socket: Socket) => {
    open.add(socket);
    checker ??= setInterval(checkDeadlines, options.checkIntervalMs).unref();
    const silent = setTimeout(() => {
      if (socket.bytesRead === 0) socket.destroy();
    }, firstRequestTimeoutMs);
    silent.unref();
    awaitNextRequest(socket);
    socket.once('close', () => {
      clearTimeout(silent);
      open.delete(socket);
      serving.delete(socket);
      receiving.delete(socket);
      if (open.size === 0 && checker) {
        clearInterval(checker);
        checker = null;
      }
    });
    if (open.size <= maxConnections) return;
    const idle = [...open].find((other) => other !== socket && !serving.has(other));
    (idle ?? socket).destroy();
  });
  // Per request: no new closure or state object (every health check pays for what is allocated here).
  // A response emits 'close' once, so a plain listener does (`once` would wrap it in a new function).
  function onResponseClose(this: ServerResponse): void {
    const request = this.req;
    const socket = request.socket;
    const left = (serving.get(socket) ?? 1) - 1;
    if (left > 0) serving.set(socket, left);
    else serving.delete(socket);
    if (socket.destroyed) return;
    const state = receiving.get(socket);
    if (state?.request !== request) return;
    state.idleBytes = socket.bytesRead;
    state.since = null;
    state.request = null;
  }
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    serving.set(socket, (serving.get(socket) ?? 0) + 1);
    // Headers read before any check saw their bytes (or a pipelined request's): the clock starts now.
    const current = receiving.get(socket);
    if (current) {
      current.since ??= performance.now();
      current.request = request;
    } else receiving.set(socket, { idleBytes: 0, since: performance.now(), request });
    response.on('close', onResponseClose);
  });
}
