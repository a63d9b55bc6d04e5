import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { descendantsOf, isRunningProcess } from '../../common/process-tree';
import { FenceConnection } from '../fence/fence-client';
import { FenceLaunchOptions, STOP_SIGNALS } from '../fence/fence-protocol';
import { LocalConnection, serverAcceptsConnections, toClientConfig } from '../local-connection';
import { PostmasterExit, StopEscalation, StopMode } from '../postgres.port';
import { CommandRunner, OsUser } from './commands';
import { FenceLink, FencePaths } from './fence-link';
import { fenceCommand, FenceProgram } from './fence-program';
import { AdapterLog, LocalPostgres } from './local-postgres';
import { isProcessAlive, livePostmasterFromPidFile, signalQuietly, sleep, waitUntil } from './os-process';
import { postmasterLogTail, readExitRecord, startFailure } from './postmaster-log';
import { nextReadyProbeMs, READY_PROBE_FIRST_MS } from './ready-probe';

/** After the escalation to an immediate shutdown, how long before SIGKILL. */
const IMMEDIATE_GRACE_MS = 2000;
/** How often a promotion is checked: it usually completes within tens of milliseconds. */
const PROMOTE_POLL_MS = 10;
const READY_POLL_MS = 50;
/** How long SIGKILLed processes may take to go (a process in uninterruptible I/O outlives it). */
const KILL_TREE_TIMEOUT_MS = 5000;
/** How long a fence adopting a running postmaster gets to answer. */
const ADOPTING_FENCE_TIMEOUT_MS = 3000;
/** Attempts to put a postmaster whose fence vanished under a new one, 0.5 s apart and doubling (about 15 s in all). */
const REFENCE_ATTEMPTS = 6;

export interface PostmasterOptions {
  /** Node-local state: fence socket, fence pid, postmaster log, last exit record. */
  stateDir: string;
  paths: FencePaths;
  /** The fence program and its interpreter. */
  fence: FenceProgram;
  log?: AdapterLog;
}

/**
 * The postmaster's life: started under a fence (a separate detached process that is its parent,
 * reports its exit at once and enforces the primary's dead man's switch even when this agent is gone),
 * adopted from an earlier agent, stopped with escalation, reloaded, promoted, killed with its children.
 */
export class Postmaster {
  /** The adoption under way, shared by concurrent callers: two fences must never adopt one postmaster. */
  private refencing: Promise<{ pid: number } | null> | null = null;

  constructor(
    private readonly local: LocalPostgres,
    private readonly commands: CommandRunner,
    private readonly fenceLink: FenceLink,
    private readonly options: PostmasterOptions,
  ) {
    fenceLink.whenUnfenced((pid) => void this.refenceAfterLoss(pid));
  }

  /**
   * Spawns the fence (detached, so it outlives this agent), which spawns the postmaster; connects to the
   * fence; then polls `SELECT 1` every ~50 ms until the server accepts connections. Rejects at once when
   * the postmaster exits meanwhile (with the tail of `postgresql.log`), and after `timeoutMs` (the
   * postmaster is then left running: the caller decides, and `exits()` still reports it). A start after
   * such a timeout waits for that postmaster again rather than start another (as the reference, whose
   * next cycle finds the server still starting).
   */
  async start(timeoutMs: number): Promise<{ pid: number }> {
    const deadline = performance.now() + timeoutMs;
    const dataDir = this.local.dataDir;
    const leftRunning = this.fenceLink.fence?.connected ? this.fenceLink.postmasterPid : null;
    if (leftRunning !== null) {
      const exits = this.fenceLink.recordExits();
      try {
        await this.waitUntilAccepting(leftRunning, deadline, timeoutMs, exits.of(leftRunning));
        return { pid: leftRunning };
      } finally {
        exits.cancel();
      }
    }
    if (this.fenceLink.fence?.connected)
      throw new Error(`postgres already runs under this agent's fence (pid ${this.fenceLink.postmasterPid})`);
    const existing = await this.fenceLink.connect(300);
    if (existing && this.fenceLink.fence === existing) {
      await this.fenceLink.detach();
      throw new Error(`a fence already runs postgres (pid ${existing.hello.pid}) for ${dataDir}: adopt it`);
    }
    const orphan = await livePostmasterFromPidFile(dataDir);
    if (orphan) throw new Error(`a postmaster (pid ${orphan}) already runs on ${dataDir} without a fence`);

    // Recorded from before spawning: this postmaster's exit may arrive with the hello, before its pid is known here.
    const exits = this.fenceLink.recordExits();
    try {
      const connection = await this.spawnFence({}, deadline, timeoutMs, (fence) => {
        // The postmaster died before we could connect (the fence exits with it): report what the fence recorded.
        const record = readExitRecord(this.options.paths.exitFile);
        if (record) throw startFailure(record, this.options.paths.postmasterLog);
        throw new Error(`the fence exited without starting postgres (see ${fence})`);
      });
      const pid = connection.hello.pid;
      await this.waitUntilAccepting(pid, deadline, timeoutMs, exits.of(pid));
      return { pid };
    } finally {
      exits.cancel();
    }
  }

  /**
   * Spawns a fence (detached, so it outlives this agent) with `extra` launch options and connects to it by
   * `deadline`; `onFenceExited` answers a fence that exited before it could be reached.
   */
  private async spawnFence(
    extra: Partial<FenceLaunchOptions>,
    deadline: number,
    timeoutMs: number,
    onFenceExited: (fenceLog: string) => never,
  ): Promise<FenceConnection> {
    const { paths } = this.options;
    const dataDir = this.local.dataDir;
    await mkdir(this.options.stateDir, { recursive: true, mode: 0o700 });
    await rm(paths.exitFile, { force: true });
    const osUser = await this.commands.osUser();
    const launch: FenceLaunchOptions = {
      dataDir,
      binDir: resolve(this.local.config.bin_dir),
      postgres: this.local.binary('postgres'),
      stateDir: this.options.stateDir,
      // postgresql.conf outside the data directory (`postgresql.config_dir`), as Patroni starts it.
      ...(this.local.configDir !== dataDir ? { configFile: this.local.configFile } : {}),
      uid: osUser?.uid,
      gid: osUser?.gid,
      // A server that runs as a primary (no standby.signal) runs under the deadline its agent armed last.
      ...(this.fenceLink.launchDeadline !== null && !existsSync(join(dataDir, 'standby.signal'))
        ? { deadline: this.fenceLink.launchDeadline }
        : {}),
      ...extra,
    };
    const fence = this.spawnFenceProcess(launch, osUser);
    // The fence listens right after spawning (or adopting) the postmaster; an early postmaster death ends the fence too.
    for (;;) {
      const connection = await this.fenceLink.connect(Math.max(100, Math.min(1000, deadline - performance.now())));
      if (connection) return connection;
      if (fence.exited) {
        if (fence.error) throw fence.error;
        onFenceExited(paths.fenceLog);
      }
      if (performance.now() >= deadline)
        throw new Error(`the fence did not answer within ${timeoutMs} ms (see ${paths.fenceLog})`);
      await sleep(20);
    }
  }

  private spawnFenceProcess(
    launch: FenceLaunchOptions,
    osUser: OsUser | null,
  ): { exited: boolean; error: Error | null } {
    const { paths } = this.options;
    const fence: { exited: boolean; error: Error | null } = { exited: false, error: null };
    const logFd = openSync(paths.fenceLog, 'a');
    try {
      const command = fenceCommand(this.options.fence, JSON.stringify(launch));
      const fenceProcess = spawn(command.file, command.args, {
        detached: true, // own session and process group: the agent's death or its terminal's signals do not reach it
        stdio: ['ignore', logFd, logFd],
        cwd: '/',
        env: this.commands.childEnv(osUser, command.env),
      });
      fenceProcess.once('exit', () => (fence.exited = true));
      fenceProcess.once('error', (error: NodeJS.ErrnoException) => {
        fence.error =
          error.code === 'ENOENT' || error.code === 'EACCES'
            ? new Error(
                `the fence runs on Python 3, and ${command.file} cannot be run (${error.code}): install python3 or set fence.python`,
              )
            : error;
        fence.exited = true;
      });
      fenceProcess.unref();
    } finally {
      closeSync(logFd);
    }
    return fence;
  }

  /**
   * Puts a postmaster that runs without a fence (its fence was killed, alone or together with the agent before
   * this one) under a new fence that adopts it: the same dead man's switch and term guard, with no restart. The
   * new fence checks that `pid` is this data directory's postmaster and journals the adoption. Concurrent callers
   * share one attempt. Resolves with the pid, or null when no fence could adopt it (logged).
   */
  refence(pid: number): Promise<{ pid: number } | null> {
    this.refencing ??= this.spawnAdoptingFence(pid).finally(() => (this.refencing = null));
    return this.refencing;
  }

  private async spawnAdoptingFence(pid: number): Promise<{ pid: number } | null> {
    try {
      const deadline = performance.now() + ADOPTING_FENCE_TIMEOUT_MS;
      const connection = await this.spawnFence({ adoptPid: pid }, deadline, ADOPTING_FENCE_TIMEOUT_MS, (fenceLog) => {
        throw new Error(`the fence did not adopt it (see ${fenceLog})`);
      });
      this.options.log?.('info', `postmaster ${pid} runs under a new fence (pid ${connection.hello.fencePid}) again`);
      return { pid: connection.hello.pid };
    } catch (error) {
      this.options.log?.('warning', `cannot put postmaster ${pid} under a new fence: ${(error as Error).message}`);
      return null;
    }
  }

  /** The fence vanished under a live postmaster: re-fence it, backing off, for as long as it runs unfenced. */
  private async refenceAfterLoss(pid: number): Promise<void> {
    for (let attempt = 1, waitMs = 500; ; attempt++, waitMs *= 2) {
      if (this.fenceLink.fence || this.fenceLink.postmasterPid !== pid) return; // adopted, stopped or restarted meanwhile
      if (!isProcessAlive(pid)) {
        // Nobody else will report the exit of a postmaster that had lost its fence.
        this.fenceLink.forgetPostmaster(pid);
        this.fenceLink.reportExit({ pid, code: null, signal: null, requested: false, fenced: false });
        return;
      }
      if (await this.refence(pid)) return;
      if (attempt === REFENCE_ATTEMPTS) {
        this.options.log?.(
          'warning',
          `gave up putting postmaster ${pid} under a new fence after ${attempt} attempts: it runs unfenced until this agent stops it or restarts`,
        );
        return;
      }
      await sleep(waitMs);
    }
  }

  /** Polls until the server accepts connections; rejects when the postmaster exits meanwhile or at the deadline. */
  private async waitUntilAccepting(
    pid: number,
    deadline: number,
    timeoutMs: number,
    exited: Promise<PostmasterExit>,
  ): Promise<void> {
    const { paths } = this.options;
    const connectionInfo = this.local.localConnection();
    let probeMs = READY_PROBE_FIRST_MS;
    while (performance.now() < deadline) {
      const probedAt = performance.now();
      const ready = await Promise.race([
        serverAcceptsConnections(connectionInfo, Math.max(100, Math.min(probeMs, deadline - probedAt))),
        exited,
      ]);
      if (ready === true) return;
      probeMs = nextReadyProbeMs(probeMs, performance.now() - probedAt);
      if (typeof ready === 'object') throw startFailure(ready, paths.postmasterLog);
      const exit = await Promise.race([sleep(READY_POLL_MS), exited]);
      if (exit) throw startFailure(exit, paths.postmasterLog);
    }
    throw new Error(
      `postgres (pid ${pid}) did not accept connections within ${timeoutMs} ms; it keeps running. Log: ${postmasterLogTail(paths.postmasterLog)}`,
    );
  }

  /**
   * Connects to a fence left by an earlier agent (or an earlier handle), or puts a postmaster that runs without one
   * under a new fence. Returns its postmaster's pid, or null when no postmaster runs (or none could be fenced).
   */
  async adopt(): Promise<{ pid: number } | null> {
    const tracked = this.fenceLink.postmasterPid;
    if (this.fenceLink.fence?.connected && tracked) return { pid: tracked };
    const connection = await this.fenceLink.connect(1000);
    if (connection && this.fenceLink.fence === connection) return { pid: connection.hello.pid };
    // No fence answers, yet a postmaster runs: its fence was killed (with the agent before this one, say).
    const orphan = await livePostmasterFromPidFile(this.local.dataDir);
    return orphan ? this.refence(orphan) : null;
  }

  /**
   * Asks the fence for a `mode` shutdown and resolves on the exit. After `timeoutMs` a smart or fast
   * stop becomes immediate, and 2 s later the postmaster gets SIGKILL (an immediate stop gets SIGKILL at
   * `timeoutMs`), each step told to `onEscalation`. Without a fence, a live postmaster named by
   * `postmaster.pid` is signalled directly. Resolves at once when nothing runs.
   */
  async stop(mode: StopMode, timeoutMs: number, onEscalation?: (step: StopEscalation) => void): Promise<void> {
    if (!this.fenceLink.fence?.connected) await this.adopt();
    const fence = this.fenceLink.fence;
    const pid = this.fenceLink.postmasterPid ?? (await livePostmasterFromPidFile(this.local.dataDir));
    if (!pid) return;
    const fencePid = fence?.hello.fencePid ?? null;
    const unfencedButTracked = !fence && this.fenceLink.postmasterPid === pid;
    const exits = this.fenceLink.recordExits();
    const exited = exits.of(pid);
    let reported = false;
    void exited.then(() => (reported = true));
    const ask = (stopMode: StopMode) => {
      if (fence?.connected) fence.send({ op: 'stop', mode: stopMode });
      else signalQuietly(pid, STOP_SIGNALS[stopMode]);
    };
    const timers: NodeJS.Timeout[] = [];
    if (mode !== 'immediate') {
      timers.push(
        setTimeout(() => {
          this.options.log?.('warning', `postgres did not stop (${mode}) within ${timeoutMs} ms: immediate shutdown`);
          onEscalation?.('immediate');
          ask('immediate');
        }, timeoutMs),
      );
    }
    timers.push(
      setTimeout(
        () => {
          this.options.log?.('warning', `postgres did not stop within the grace period: SIGKILL to ${pid}`);
          onEscalation?.('sigkill');
          signalQuietly(pid, 'SIGKILL');
        },
        mode === 'immediate' ? timeoutMs : timeoutMs + IMMEDIATE_GRACE_MS,
      ),
    );
    try {
      ask(mode);
      // The fence's exit event normally ends this; the liveness check covers a postmaster without a fence.
      while (!(await Promise.race([exited, sleep(fence ? 250 : 50).then(() => null)])) && isProcessAlive(pid)) {
        /* wait */
      }
    } finally {
      timers.forEach(clearTimeout);
      exits.cancel();
    }
    this.fenceLink.forgetPostmaster(pid);
    // Nobody else will report the exit of a postmaster that had lost its fence.
    if (unfencedButTracked && !reported)
      this.fenceLink.reportExit({ pid, code: null, signal: null, requested: true, fenced: false });
    // The fence exits within milliseconds once the agent has read the exit; a demotion's release waits on this.
    if (fencePid) await waitUntil(() => !isProcessAlive(fencePid), 1000, 2);
  }

  /** SIGHUP to the postmaster (through the fence when connected). */
  async reload(): Promise<void> {
    const fence = this.fenceLink.fence;
    if (fence?.connected) {
      fence.send({ op: 'signal', signal: 'SIGHUP' });
      return;
    }
    const pid = await livePostmasterFromPidFile(this.local.dataDir);
    if (!pid) throw new Error('cannot reload: postgres is not running');
    process.kill(pid, 'SIGHUP');
  }

  /**
   * `pg_ctl promote -W` as the OS user, then waits until `pg_is_in_recovery()` is false. pg_ctl's
   * own wait polls pg_control ten times a second; asking the server directly ends the write gap of
   * a switchover up to 100 ms sooner.
   */
  async promote(timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    await this.commands.run(this.local.binary('pg_ctl'), ['promote', '-D', this.local.dataDir, '-W'], {
      env: { LC_MESSAGES: 'C' },
    });
    const connection = this.local.localConnection();
    while (performance.now() < deadline) {
      const inRecovery = await queryInRecovery(connection).catch(() => null);
      if (inRecovery === false) return;
      await sleep(PROMOTE_POLL_MS);
    }
    throw new Error(`postgres still in recovery ${timeoutMs} ms after pg_ctl promote`);
  }

  /** SIGKILL to the postmaster and every process below it; resolves once they are all gone. */
  async killProcessTree(): Promise<void> {
    const postmaster = this.fenceLink.postmasterPid;
    if (postmaster === null) return;
    const victims = [postmaster, ...descendantsOf(postmaster)];
    for (const pid of victims) signalQuietly(pid, 'SIGKILL');
    if (!(await waitUntil(() => victims.every((pid) => !isRunningProcess(pid)), KILL_TREE_TIMEOUT_MS))) {
      const left = victims.filter(isRunningProcess);
      throw new Error(
        `processes ${left.join(', ')} of postmaster ${postmaster} still run ${KILL_TREE_TIMEOUT_MS} ms after SIGKILL`,
      );
    }
  }
}

async function queryInRecovery(connection: LocalConnection): Promise<boolean> {
  const client = new Client({ ...toClientConfig(connection), connectionTimeoutMillis: 1000, query_timeout: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const { rows } = await client.query<{ in_recovery: boolean }>(
      'SELECT pg_catalog.pg_is_in_recovery() AS in_recovery',
    );
    return rows[0].in_recovery;
  } finally {
    await client.end().catch(() => undefined);
  }
}
