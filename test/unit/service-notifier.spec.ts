import { join } from 'node:path';
import { Logger } from '../../src/common/logger';
import { createServiceNotifier, monotonicMicroseconds, takeNotifySocket } from '../../src/common/service-notifier';
import { bindNotifySocket, NotifySocket } from '../helpers/notify-socket';
import { removeDir, tmpDir } from '../helpers/tmp';
import { waitFor } from '../helpers/wait-for';

/** The datagrams systemd would receive, on a real AF_UNIX datagram socket bound by the test. */
function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, debug() {}, info() {}, error() {}, critical() {}, warning: (message) => warnings.push(message) };
}

describe('systemd notifications', () => {
  let dir: string;
  let socket: NotifySocket | null = null;

  beforeEach(() => {
    dir = tmpDir('stator-notify-');
  });

  afterEach(() => {
    socket?.close();
    socket = null;
    removeDir(dir);
  });

  it('sends READY=1, RELOADING=1 with the monotonic time, and STOPPING=1, in order, to a socket path', async () => {
    socket = await bindNotifySocket(join(dir, 'notify'));
    const logger = recordingLogger();
    const notifier = createServiceNotifier(socket.path, logger);
    await notifier.ready();
    const before = monotonicMicroseconds();
    await notifier.reloading();
    const after = monotonicMicroseconds();
    await notifier.ready();
    await notifier.stopping();
    notifier.close();
    const messages = socket.messages;
    await waitFor(() => messages.length === 4, { description: 'four datagrams' });
    expect(messages[0]).toBe('READY=1');
    const reloading = /^RELOADING=1\nMONOTONIC_USEC=(\d+)$/.exec(messages[1]);
    expect(reloading).not.toBeNull();
    expect(BigInt(reloading![1])).toBeGreaterThanOrEqual(before);
    expect(BigInt(reloading![1])).toBeLessThanOrEqual(after);
    expect(messages.slice(2)).toEqual(['READY=1', 'STOPPING=1']);
    expect(logger.warnings).toEqual([]);
  });

  it('reaches a socket in the abstract namespace (@name)', async () => {
    socket = await bindNotifySocket(`@stator-notify-test-${process.pid}`);
    const notifier = createServiceNotifier(socket.path, recordingLogger());
    await notifier.ready();
    notifier.close();
    await waitFor(() => socket!.messages.length === 1, { description: 'READY=1' });
    expect(socket.messages).toEqual(['READY=1']);
  });

  it('warns, and goes on, when nobody listens at the socket', async () => {
    const logger = recordingLogger();
    const notifier = createServiceNotifier(join(dir, 'nobody'), logger);
    await notifier.ready();
    notifier.close();
    expect(logger.warnings).toEqual([
      expect.stringMatching(/^telling systemd READY=1 failed: .*No such file or directory/),
    ]);
  });

  it('warns, and goes on, when python3 cannot run', async () => {
    const logger = recordingLogger();
    const notifier = createServiceNotifier(join(dir, 'notify'), logger, join(dir, 'no-python3'));
    await notifier.ready();
    await notifier.stopping();
    expect(logger.warnings).toEqual([
      expect.stringMatching(/notification helper .* could not run: .*ENOENT.*; systemd is not notified$/),
    ]);
  });

  it('refuses socket kinds it cannot reach (vsock:), with a warning', async () => {
    const logger = recordingLogger();
    const notifier = createServiceNotifier('vsock:2:1234', logger);
    await notifier.ready();
    expect(logger.warnings).toEqual([
      'NOTIFY_SOCKET=vsock:2:1234: only a socket path or an abstract @name is supported; systemd is not notified',
    ]);
  });

  it('takes NOTIFY_SOCKET out of the environment children inherit', () => {
    const env: NodeJS.ProcessEnv = { NOTIFY_SOCKET: '/run/systemd/notify', PATH: '/usr/bin' };
    expect(takeNotifySocket(env)).toBe('/run/systemd/notify');
    expect(env).toEqual({ PATH: '/usr/bin' });
    expect(takeNotifySocket(env)).toBeNull();
  });
});
