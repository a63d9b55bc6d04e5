import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, fetch } from 'undici';
import { freePort } from './ports';
import { removeDir, tmpDir } from './tmp';
import { waitFor } from './wait-for';

export const ETCD_BINARY = process.env.ETCD_BINARY ?? '/usr/bin/etcd';

export interface EtcdHandle {
  /** `127.0.0.1:<client port>`. */
  endpoint: string;
  clientPort: number;
  peerPort: number;
  /** PID of the current etcd process (changes with restart()). */
  readonly pid: number;
  dataDir: string;
  /** Kills etcd by PID and removes its directory. */
  stop(): Promise<void>;
  /**
   * SIGSTOP: etcd keeps its sockets open but answers nothing. Resolves once every etcd thread is
   * stopped: the kernel stops the other threads only after one of them has run the signal, and on
   * a busy machine they go on answering requests meanwhile.
   */
  pause(): Promise<void>;
  /** SIGCONT. */
  resume(): void;
  /**
   * Kills etcd and starts it again on the same ports; resolves when it answers. It keeps its data,
   * or with `empty` comes back as a new, empty etcd (a lost etcd replaced on the same address).
   */
  restart(options?: { empty?: boolean }): Promise<void>;
}

/** SIGSTOP to `pid`; resolves once all its threads have stopped (see EtcdHandle.pause). */
export async function freezeProcess(pid: number): Promise<void> {
  process.kill(pid, 'SIGSTOP');
  await waitFor(() => everyThreadStopped(pid), {
    timeoutMs: 5000,
    intervalMs: 2,
    description: `every thread of process ${pid} stopped`,
  });
}

/** True once every thread of `pid` is in the stopped state (`T` in /proc/<pid>/task/<tid>/stat). */
function everyThreadStopped(pid: number): boolean {
  const tasks = `/proc/${pid}/task`;
  return readdirSync(tasks).every((tid) => {
    const stat = readFileSync(`${tasks}/${tid}/stat`, 'utf8');
    // The state follows the command name, which is in parentheses and may itself hold any character.
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'T';
  });
}

/** PEM files for an etcd serving clients over TLS: its certificate and key, and the CA its clients' certificates must chain to. */
export interface EtcdTlsFiles {
  ca: string;
  cert: string;
  key: string;
}

export interface StartEtcdOptions {
  /** Serve clients over https and demand a client certificate issued by `ca`. */
  tls?: EtcdTlsFiles;
  /** More etcd flags, e.g. `--auth-token=simple`. */
  extraArgs?: string[];
  /** A directory of its own that outlives stop() (data and log), so that a later start finds the same cluster. */
  keepIn?: string;
  /** The ports to serve on (a kept etcd comes back on its old ones); default: free ports. */
  clientPort?: number;
  peerPort?: number;
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
export async function startEtcd(options: StartEtcdOptions = {}): Promise<EtcdHandle> {
  const dir = options.keepIn ?? tmpDir('stator-etcd-');
  mkdirSync(dir, { recursive: true });
  const dataDir = join(dir, 'data');
  const clientPort = options.clientPort ?? (await freePort());
  const peerPort = options.peerPort ?? (await freePort());
  const tls = options.tls;
  const clientUrl = `${tls ? 'https' : 'http'}://127.0.0.1:${clientPort}`;
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
    '--pre-vote',
    '--log-level=warn',
    ...(tls
      ? [`--cert-file=${tls.cert}`, `--key-file=${tls.key}`, `--trusted-ca-file=${tls.ca}`, '--client-cert-auth']
      : []),
    ...(options.extraArgs ?? []),
  ];
  const endpoint = `127.0.0.1:${clientPort}`;
  const ready = readinessProbe(endpoint, tls);

  let child = await launch(args, join(dir, 'etcd.log'), ready);
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
    clientPort,
    peerPort,
    async stop() {
      await kill();
      if (!options.keepIn) removeDir(dir);
    },
    pause: () => freezeProcess(child.pid!),
    resume() {
      process.kill(child.pid!, 'SIGCONT');
    },
    async restart({ empty = false } = {}) {
      await kill();
      if (empty) removeDir(dataDir);
      child = await launch(args, join(dir, 'etcd.log'), ready);
    },
  };
}

/**
 * Whether etcd serves reads: a linearizable read succeeds only once the member has elected itself
 * leader (it answers `/version` earlier). Over TLS, with the client certificate etcd demands.
 */
export function readinessProbe(
  endpoint: string,
  tls: EtcdTlsFiles | undefined,
): { endpoint: string; probe: () => Promise<boolean> } {
  const dispatcher = tls
    ? new Agent({ connect: { ca: readFileSync(tls.ca), cert: readFileSync(tls.cert), key: readFileSync(tls.key) } })
    : undefined;
  const probe = async () => {
    const response = await fetch(`${tls ? 'https' : 'http'}://${endpoint}/v3/kv/range`, {
      method: 'POST',
      body: JSON.stringify({ key: Buffer.from('ready').toString('base64') }),
      signal: AbortSignal.timeout(500),
      dispatcher,
    });
    // With auth enabled etcd refuses an anonymous read, which still shows it is serving.
    return response.ok || response.status === 400 || response.status === 401;
  };
  return { endpoint, probe };
}

async function launch(
  args: string[],
  logFile: string,
  ready: { endpoint: string; probe: () => Promise<boolean> },
): Promise<ChildProcess> {
  const log = openSync(logFile, 'a');
  const child = spawn(ETCD_BINARY, args, { stdio: ['ignore', log, log] });
  closeSync(log);
  running.add(child);
  const exited = new Promise<never>((_resolve, reject) =>
    child.once('exit', (code, signal) =>
      reject(new Error(`etcd exited (${code ?? signal}) during start; see ${logFile}`)),
    ),
  );
  exited.catch(() => undefined);
  await Promise.race([
    waitFor(ready.probe, { timeoutMs: 10_000, description: `etcd serving reads on ${ready.endpoint}` }),
    exited,
  ]);
  return child;
}
