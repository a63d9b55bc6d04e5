import { ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { waitFor } from './wait-for';

/**
 * What systemd does with NOTIFY_SOCKET, as far as a test can tell: an AF_UNIX datagram socket bound at `path`
 * (or `@name` in the abstract namespace) by a small python3 receiver, since Node cannot bind one.
 * Every datagram received lands in `messages`, in order.
 */
export interface NotifySocket {
  path: string;
  messages: string[];
  close(): void;
}

const RECEIVER = `
import json, socket, sys
path = sys.argv[1]
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind('\\0' + path[1:] if path.startswith('@') else path)
print(json.dumps('bound'), flush=True)
while True:
    print(json.dumps(sock.recv(4096).decode()), flush=True)
`;

export async function bindNotifySocket(path: string): Promise<NotifySocket> {
  const child: ChildProcessWithoutNullStreams = spawn('python3', ['-c', RECEIVER, path], { stdio: 'pipe' });
  const received: string[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => received.push(JSON.parse(line) as string));
  await waitFor(() => received[0] === 'bound', {
    timeoutMs: 10_000,
    description: `a datagram socket bound at ${path}`,
  });
  received.shift();
  return { path, messages: received, close: () => child.kill() };
}
