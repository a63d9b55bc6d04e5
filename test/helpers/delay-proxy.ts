import { createServer, Server, Socket, connect } from 'node:net';

/** A TCP proxy in front of one host:port that holds every chunk `delayMs` in each direction: a slow link, in process. */
export interface DelayProxy {
  endpoint: string;
  /** The one-way delay, changed at any time; it applies to chunks that arrive after the change. */
  delayMs: number;
  close(): Promise<void>;
}

export async function startDelayProxy(target: string, delayMs = 0): Promise<DelayProxy> {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const sockets = new Set<Socket>();
  const proxy: DelayProxy = { endpoint: '', delayMs, close: () => closeServer(server, sockets) };
  const forward = (from: Socket, to: Socket) => {
    from.on('data', (chunk) => setTimeout(() => to.destroyed || to.write(chunk), proxy.delayMs));
    from.on('close', () => setTimeout(() => to.destroy(), proxy.delayMs));
    from.on('error', () => to.destroy());
  };
  const server: Server = createServer((client) => {
    const upstream = connect(port, host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    }
    forward(client, upstream);
    forward(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  proxy.endpoint = `127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return proxy;
}

function closeServer(server: Server, sockets: Set<Socket>): Promise<void> {
  for (const socket of sockets) socket.destroy();
  return new Promise((resolve) => server.close(() => resolve()));
}
