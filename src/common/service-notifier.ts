import { ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { createInterface } from 'node:readline';
import { Logger } from './logger';

/** What the service manager (systemd, `Type=notify`) is told about the agent's life. */
export interface ServiceNotifier {
  /** `READY=1`: started, or a reload is done. */
  ready(): Promise<void>;
  /** `RELOADING=1` with the CLOCK_MONOTONIC time it began, as `Type=notify-reload` requires. */
  reloading(): Promise<void>;
  /** `STOPPING=1`: the agent has begun to stop. */
  stopping(): Promise<void>;
  /** Ends the helper; later calls do nothing. */
  close(): void;
}

export const NOTIFY_SOCKET = 'NOTIFY_SOCKET';
/** How long one message may take before it is given up (the helper answers in microseconds). */
const SEND_DEADLINE_MS = 2000;

/**
 * Node has no AF_UNIX datagram sockets, so one small python3 process sends them, for the agent's whole life: a
 * sender that has already exited cannot be attributed to the unit by systemd, and its message would be dropped.
 * It reads one JSON string a line and answers `ok` or the error. The unit needs `NotifyAccess=all` (the sender is
 * the agent's child, not its main PID).
 */
const HELPER = `
import json, os, socket, sys
path = os.environ['NOTIFY_SOCKET']
if path.startswith('@'):
    path = '\\0' + path[1:]
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
for line in sys.stdin:
    try:
        sock.sendto(json.loads(line).encode(), path)
        print('ok', flush=True)
    except Exception as error:
        print(str(error) or type(error).__name__, flush=True)
`;

/**
 * Reads NOTIFY_SOCKET and removes it from this process's environment, so that no child (PostgreSQL, the fence,
 * callbacks, custom methods) inherits it and tells systemd READY=1 or STOPPING=1 in the agent's name.
 */
export function takeNotifySocket(env: NodeJS.ProcessEnv): string | null {
  const socket = env[NOTIFY_SOCKET];
  delete env[NOTIFY_SOCKET];
  return socket ? socket : null;
}

/** CLOCK_MONOTONIC in microseconds: libuv's hrtime reads that clock on Linux. */
export function monotonicMicroseconds(): bigint {
  return process.hrtime.bigint() / 1000n;
}

/** Does nothing: not started by a service manager that listens. */
export const silentNotifier: ServiceNotifier = {
  ready: async () => undefined,
  reloading: async () => undefined,
  stopping: async () => undefined,
  close: () => undefined,
};

/** A notifier for `socket` (a path, or `@name` in the abstract namespace); silent when there is none. */
export function createServiceNotifier(
  socket: string | null,
  logger: Logger,
  python: string = pythonOnPath(),
): ServiceNotifier {
  if (socket === null) return silentNotifier;
  if (!socket.startsWith('/') && !socket.startsWith('@')) {
    logger.warning(
      `NOTIFY_SOCKET=${socket}: only a socket path or an abstract @name is supported; systemd is not notified`,
    );
    return silentNotifier;
  }
  return new DatagramHelperNotifier(socket, logger, python);
}

class DatagramHelperNotifier implements ServiceNotifier {
  private helper: ChildProcessWithoutNullStreams | null;
  /** Resolvers of the messages sent, oldest first; `null`: the helper is gone (already a warning). */
  private readonly answers: ((answer: string | null) => void)[] = [];
  private queue: Promise<void> = Promise.resolve();

  constructor(
    socket: string,
    private readonly logger: Logger,
    python: string,
  ) {
    const helper = spawn(python, ['-c', HELPER], {
      env: { [NOTIFY_SOCKET]: socket, PATH: process.env.PATH ?? '' },
      stdio: 'pipe',
    });
    this.helper = helper;
    helper.on('error', (error) =>
      this.giveUp(`the systemd notification helper (${python}) could not run: ${error.message}`),
    );
    helper.on('exit', (code, signal) => this.giveUp(`the systemd notification helper exited (${signal ?? code})`));
    helper.stdin.on('error', () => undefined);
    createInterface({ input: helper.stdout }).on('line', (line) => this.answers.shift()?.(line));
  }

  ready(): Promise<void> {
    return this.send('READY=1');
  }

  reloading(): Promise<void> {
    return this.send(`RELOADING=1\nMONOTONIC_USEC=${monotonicMicroseconds()}`);
  }

  stopping(): Promise<void> {
    return this.send('STOPPING=1');
  }

  close(): void {
    const helper = this.helper;
    this.helper = null;
    helper?.stdin.end();
  }

  /** One message at a time, in order, each with a deadline; a failure is a warning, never an error of the agent. */
  private send(message: string): Promise<void> {
    this.queue = this.queue.then(() => this.sendNow(message));
    return this.queue;
  }

  private sendNow(message: string): Promise<void> {
    const helper = this.helper;
    if (!helper) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => answer(`no answer within ${SEND_DEADLINE_MS} ms`), SEND_DEADLINE_MS);
      const answer = (text: string | null) => {
        clearTimeout(timer);
        const index = this.answers.indexOf(answer);
        if (index >= 0) this.answers.splice(index, 1);
        if (text !== null && text !== 'ok')
          this.logger.warning(`telling systemd ${message.split('\n')[0]} failed: ${text}`);
        resolve();
      };
      this.answers.push(answer);
      helper.stdin.write(`${JSON.stringify(message)}\n`);
    });
  }

  /** After close() the helper's exit is expected; before, it is worth a warning. */
  private giveUp(reason: string): void {
    if (this.helper !== null) this.logger.warning(`${reason}; systemd is not notified`);
    this.helper = null;
    for (const answer of this.answers.splice(0)) answer(null);
  }
}

/** Debian's `/usr/bin/python3`, else the first `python3` on PATH (as the fence's default). */
function pythonOnPath(): string {
  const candidates = [
    '/usr/bin/python3',
    ...(process.env.PATH ?? '')
      .split(delimiter)
      .filter(Boolean)
      .map((dir) => join(dir, 'python3')),
  ];
  return (
    candidates.find((path) => {
      try {
        accessSync(path, constants.X_OK);
        return true;
      } catch {
        return false;
      }
    }) ?? 'python3'
  );
}
