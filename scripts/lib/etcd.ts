import { ChildProcess, spawn } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './ports';
import { removeDir, tmpDir } from './tmp';
import { waitFor } from './wait-for';

export const ETCD_BINARY = process.env.ETCD_BINARY ?? '/usr/bin/etcd';

export interface EtcdHandle {
  /** `127.0.0.1:<client port>`. */
  endpoint: string;
  /** PID of the current etcd process (changes with restart()). */
  readonly pid: number;
  dataDir: string;
  /** Kills etcd by PID and removes its directory. */
  stop(): Promise<void>;
  /** SIGSTOP: etcd keeps its sockets open but answers nothing. */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  /** Kills etcd and starts it again on the same ports and data dir; resolves when it answers. */
  restart(): Promise<void>;
}

/** Every etcd this process started, killed on exit even when a test forgets stop(). */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Starts a single-member etcd on two free loopback ports (client, peer) in a fresh temp dir and
 * waits until it serves reads (it answers `/version` earlier, before it has elected itself).
 * Short heartbeat and election timeouts make start and restart quick (and lower etcd's minimum
 * lease TTL to 1 s).
 */
export async function startEtcd(): Promise<EtcdHandle> {
  const dir = tmpDir('stator-etcd-');
  const dataDir = join(dir, 'data');
  const clientPort = await freePort();
  let peerPort = await freePort();
  while (peerPort === clientPort) peerPort = await freePort();
  const clientUrl = `http://127.0.0.1:${clientPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const args = [
    '--name=test',
    `--data-dir=${dataDir}`,
    `--listen-client-urls=${clientUrl}`,
    `--advertise-client-urls=${clientUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=test=${peerUrl}`,
    '--heartbeat-interval=50',
    '--election-timeout=500',
    '--log-level=warn',
  ];
  const endpoint = `127.0.0.1:${clientPort}`;

  let child = await launch(args, join(dir, 'etcd.log'), endpoint);
  const kill = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    process.kill(child.pid!, 'SIGKILL'); // works on a paused (SIGSTOP) etcd too
    await exited;
    running.delete(child);
  };

  return {
    endpoint,
    dataDir,
    get pid() {
      return child.pid!;
    },
    async stop() {
      await kill();
      removeDir(dir);
    },
    pause() {
      process.kill(child.pid!, 'SIGSTOP');
    },
    resume() {
      process.kill(child.pid!, 'SIGCONT');
    },
    async restart() {
      await kill();
      child = await launch(args, join(dir, 'etcd.log'), endpoint);
    },
  };
}

async function launch(args: string[], logFile: string, endpoint: string): Promise<ChildProcess> {
  const log = openSync(logFile, 'a');
  const child = spawn(ETCD_BINARY, args, { stdio: ['ignore', log, log] });
  closeSync(log);
  running.add(child);
  const exited = new Promise<never>((_resolve, reject) =>
    child.once('exit', (code, signal) => reject(new Error(`etcd exited (${code ?? signal}) during start; see ${logFile}`))),
  );
  exited.catch(() => undefined);
  await Promise.race([
    waitFor(
      async () => {
        // A linearizable read succeeds only once the member has elected itself leader.
        const response = await fetch(`http://${endpoint}/v3/kv/range`, {
          method: 'POST',
          body: JSON.stringify({ key: Buffer.from('ready').toString('base64') }),
          signal: AbortSignal.timeout(500),
        });
        return response.ok;
      },
      { timeoutMs: 10_000, description: `etcd serving reads on ${endpoint}` },
    ),
    exited,
  ]);
  return child;
}
