import { createConnection, Socket } from 'node:net';
import { createLineParser, FenceEvent, FenceRequest, FenceWatchdogState, PostmasterExitEvent } from './fence-protocol';

export type FenceHello = Extract<FenceEvent, { event: 'hello' }>;

export interface FenceConnectionHandlers {
  /** The fence reported the postmaster's exit. */
  onExit(exit: PostmasterExitEvent): void;
  /** The socket closed without an exit event and without `close()` (the fence died or was killed). */
  onLost(): void;
  /** The fence's watchdog changed state (activated, failed, closed). */
  onWatchdog?(state: FenceWatchdogState): void;
}

/**
 * The agent's end of one fence socket. Events that arrive before `attach` (an exit may come in the same
 * read as the hello) are queued and delivered by `attach`, so none is lost between connecting and
 * wiring up the handlers.
 */
export class FenceConnection {
  private closedByUs = false;
  private sawExit = false;
  private handlers: FenceConnectionHandlers | null = null;
  private readonly queued: Array<(handlers: FenceConnectionHandlers) => void> = [];

  private constructor(
    private readonly socket: Socket,
    readonly hello: FenceHello,
  ) {}

  /**
   * Connects and waits for the fence's hello. Rejects when nothing answers (ENOENT, ECONNREFUSED)
   * or no hello arrives within `timeoutMs`.
   */
  static connect(socketPath: string, timeoutMs = 1000): Promise<FenceConnection> {
    return new Promise((resolve, reject) => {
      const socket = createConnection(socketPath);
      let connection: FenceConnection | null = null;
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`no hello from the fence at ${socketPath} within ${timeoutMs} ms`));
      }, timeoutMs);
      socket.on(
        'data',
        createLineParser((message) => {
          const event = message as FenceEvent;
          if (event.event === 'hello' && !connection) {
            clearTimeout(timer);
            connection = new FenceConnection(socket, event);
            resolve(connection);
          } else if (event.event === 'exit' && connection) {
            connection.sawExit = true;
            connection.deliver((handlers) => handlers.onExit(event));
          } else if (event.event === 'watchdog' && connection) {
            const { running, timeout, device, error, required, reason } = event;
            connection.deliver((handlers) =>
              handlers.onWatchdog?.({ running, timeout, device, error, required, reason }),
            );
          }
        }),
      );
      socket.on('error', (error) => {
        if (!connection) {
          clearTimeout(timer);
          reject(error);
        }
        // Once connected, 'close' follows every error and is handled there.
      });
      socket.on('close', () => {
        clearTimeout(timer);
        if (!connection) {
          reject(new Error(`the fence at ${socketPath} closed the connection before its hello`));
          return;
        }
        if (!connection.sawExit && !connection.closedByUs) connection.deliver((handlers) => handlers.onLost());
      });
    });
  }

  /** Wires up the handlers and delivers what arrived before. */
  attach(handlers: FenceConnectionHandlers): void {
    this.handlers = handlers;
    for (const deliver of this.queued.splice(0)) deliver(handlers);
  }

  /** True once the fence reported the postmaster's exit. */
  get postmasterExited(): boolean {
    return this.sawExit;
  }

  private deliver(event: (handlers: FenceConnectionHandlers) => void): void {
    if (this.handlers) event(this.handlers);
    else this.queued.push(event);
  }

  /** Sends one request; silently dropped when the socket is gone (the caller learns that from onExit/onLost). */
  send(request: FenceRequest): void {
    if (!this.socket.destroyed && this.socket.writable) this.socket.write(JSON.stringify(request) + '\n');
  }

  get connected(): boolean {
    return !this.socket.destroyed;
  }

  /** Flushes pending requests (an `arm` just sent must reach the fence), then closes. */
  close(): Promise<void> {
    this.closedByUs = true;
    if (this.socket.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.socket.destroy();
        resolve();
      }, 1000);
      this.socket.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
      this.socket.end();
    });
  }
}
