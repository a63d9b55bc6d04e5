import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server, Socket } from 'node:net';
import { Server as TlsServer } from 'node:tls';

/** Open connections a node keeps at most; far above what load balancers, probes and operators use. */
export const MAX_CONNECTIONS = 512;

export interface ConnectionGuardOptions {
  maxConnections: number;
  /** A connection that has not started a request this long after opening is closed (Node never times those out). */
  firstRequestTimeoutMs: number;
}

/**
 * Caps the open connections at `maxConnections` without locking health checks out: when a new
 * connection would pass the cap, the oldest connection that has no request in progress (an idle
 * keep-alive connection, or one still dribbling its headers) is closed to make room. Only when every
 * connection is serving a request is the new one refused. Node's own `maxConnections` would refuse
 * new connections instead, so a client holding idle connections could keep HAProxy's checks out and
 * take the primary out of rotation.
 */
export function guardConnections(server: Server, { maxConnections, firstRequestTimeoutMs }: ConnectionGuardOptions): void {
  const open = new Set<Socket>();
  const serving = new Map<Socket, number>();
  const started = new WeakSet<Socket>();

  // Over TLS, requests carry the decrypted socket, announced on 'secureConnection' (handshakes are bounded by handshakeTimeout).
  server.on(server instanceof TlsServer ? 'secureConnection' : 'connection', (socket: Socket) => {
    open.add(socket);
    const silent = setTimeout(() => {
      if (!started.has(socket)) socket.destroy();
    }, firstRequestTimeoutMs);
    silent.unref();
    socket.once('data', () => started.add(socket));
    socket.once('close', () => {
      clearTimeout(silent);
      open.delete(socket);
      serving.delete(socket);
    });
    if (open.size <= maxConnections) return;
    const idle = [...open].find((other) => other !== socket && !serving.has(other));
    (idle ?? socket).destroy();
  });
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    serving.set(socket, (serving.get(socket) ?? 0) + 1);
    response.once('close', () => {
      const left = (serving.get(socket) ?? 1) - 1;
      if (left > 0) serving.set(socket, left);
      else serving.delete(socket);
    });
  });
}
