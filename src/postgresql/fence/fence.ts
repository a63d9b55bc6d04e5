import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, renameSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { createConnection, createServer, Server, Socket } from 'node:net';
import { join } from 'node:path';
import { descendantsOf, isRunningProcess } from '../../common/process-tree';
import {
  createLineParser,
  FenceEvent,
  FenceLaunchOptions,
  FenceRequest,
  fencePaths,
  PostmasterExitEvent,
  STOP_SIGNALS,
} from './fence-protocol';
import { LeaderTermGuard } from './leader-term-guard';

/** setTimeout's largest delay; longer waits are re-armed when the timer fires. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** After the fence's SIGQUIT, how long the postmaster gets before SIGKILL. */
const FENCE_KILL_GRACE_MS = 1000;
/** How long the fence waits for clients to read the exit event before it exits anyway. */
const EXIT_FLUSH_MS = 500;
/** A fast shutdown of its own (the agent is gone) that takes longer than this becomes immediate. */
const OWN_FAST_STOP_MS = 1500;
/** How long the processes of a SIGKILLed postmaster get to be reaped before the fence gives up waiting. */
const TREE_GONE_WAIT_MS = 2000;

export type FenceLog = (message: string) => void;

/**
 * The fence: parent of one postmaster life, and its dead man's switch.
 *
 * It runs as a process of its own (spawned detached by the agent), so it keeps counting down while
 * the agent is dead, frozen or cut off. Agents talk to it over a unix socket; any number may connect,
 * and the last `arm` from any of them sets the deadline. A client going away never disarms the switch:
 * that is exactly the case it exists for.
 */
export class Fence {
  private readonly paths: ReturnType<typeof fencePaths>;
  private readonly clients = new Set<Socket>();
  private server: Server | null = null;
  private postmaster: ChildProcess | null = null;
  private postmasterPid = 0;
  private startedAt = 0;
  private deadline: number | null = null;
  private deadlineTimer: NodeJS.Timeout | null = null;
  private killTimer: NodeJS.Timeout | null = null;
  private requested = false;
  private fenced = false;
  private exited = false;
  private finished = false;
  private told = false;
  /** Backends and helpers of a postmaster the fence SIGKILLed: they must be gone too before the term ends. */
  private killedTree: number[] = [];
  private readonly term: LeaderTermGuard;

  constructor(
    private readonly options: FenceLaunchOptions,
    private readonly log: FenceLog,
    /** Called once everything is reported; the program exits here. */
    private readonly onDone: (exitCode: number) => void,
  ) {
    this.paths = fencePaths(options.stateDir);
    this.term = new LeaderTermGuard(this.paths.journal, log, (reason) => this.stopOnOwnAccount(reason));
  }

  async run(): Promise<void> {
    if (await this.anotherFenceAnswers()) {
      // Two fences on one data directory would be two postmasters; the second one must not start.
      this.log(`another fence already answers on ${this.paths.socket}; not starting`);
      this.onDone(2);
      return;
    }
    writeFileSync(this.paths.pidFile, `${process.pid}\n`);
    this.spawnPostmaster();
    if (this.exited) return;
    // Armed before any agent connects: the postmaster never runs past the lease its agent last knew.
    if (typeof this.options.deadline === 'number' && Number.isFinite(this.options.deadline)) {
      this.deadline = this.options.deadline;
      this.scheduleDeadline();
    }
    await this.listen();
  }

  private spawnPostmaster(): void {
    const { dataDir, binDir, configFile, uid, gid } = this.options;
    const args = ['-D', dataDir];
    if (configFile) args.push('-c', `config_file=${configFile}`);
    const logFd = openSync(this.paths.postmasterLog, 'a');
    let child: ChildProcess;
    try {
      child = spawn(join(binDir, 'postgres'), args, {
        cwd: dataDir,
        stdio: ['ignore', logFd, logFd],
        uid,
        gid,
      });
    } catch (error) {
      this.reportSpawnFailure(error);
      return;
    } finally {
      closeSync(logFd);
    }
    this.postmaster = child;
    this.startedAt = Date.now();
    child.once('error', (error) => {
      if (!child.pid) this.reportSpawnFailure(error);
      else this.log(`postmaster process error: ${String(error)}`);
    });
    if (!child.pid) return; // 'error' follows on the next tick
    this.postmasterPid = child.pid;
    this.log(`postmaster started, pid ${child.pid}`);
    child.once('exit', (code, signal) => this.onPostmasterExit(code, signal));
  }

  private reportSpawnFailure(error: unknown): void {
    this.log(`cannot start postgres: ${String(error)}`);
    if (this.exited) return;
    const exit: PostmasterExitEvent = {
      event: 'exit',
      pid: 0,
      code: null,
      signal: null,
      requested: false,
      fenced: false,
      error: error instanceof Error ? error.message : String(error),
    };
    this.recordExit(exit);
    this.finish(exit);
  }

  private async listen(): Promise<void> {
    rmSync(this.paths.socket, { force: true });
    const server = createServer((socket) => this.onClient(socket));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.paths.socket, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', (error) => this.log(`socket server error: ${String(error)}`));
    chmodSync(this.paths.socket, 0o600);
    this.log(`listening on ${this.paths.socket}`);
  }

  private onClient(socket: Socket): void {
    if (this.exited) {
      socket.destroy();
      return;
    }
    this.clients.add(socket);
    this.term.agentConnected();
    socket.on('close', () => {
      this.clients.delete(socket);
      if (this.clients.size === 0 && !this.exited) this.term.agentsGone();
    });
    socket.on('error', () => socket.destroy());
    socket.on(
      'data',
      createLineParser(
        (message) => this.onRequest(message as FenceRequest),
        (line) => this.log(`ignored malformed request: ${line.slice(0, 200)}`),
      ),
    );
    this.send(socket, {
      event: 'hello',
      pid: this.postmasterPid,
      startedAt: this.startedAt,
      fencePid: process.pid,
      deadline: this.deadline,
    });
  }

  private onRequest(request: FenceRequest): void {
    if (this.exited) return;
    switch (request?.op) {
      case 'arm':
        if (typeof request.deadline !== 'number' || !Number.isFinite(request.deadline)) {
          this.log(`ignored arm without a numeric deadline`);
          return;
        }
        this.deadline = request.deadline;
        this.term.hold(request.term);
        this.scheduleDeadline();
        return;
      case 'disarm':
        this.deadline = null;
        this.term.hold(undefined);
        this.clearDeadlineTimer();
        return;
      case 'stop': {
        const signal = STOP_SIGNALS[request.mode];
        if (!signal) {
          this.log(`ignored stop with unknown mode ${String(request.mode)}`);
          return;
        }
        this.requested = true;
        this.log(`stop requested (${request.mode})`);
        this.signalPostmaster(signal);
        return;
      }
      case 'signal':
        if (request.signal === 'SIGHUP') this.signalPostmaster('SIGHUP');
        return;
      default:
        this.log(`ignored unknown request ${JSON.stringify(request).slice(0, 200)}`);
    }
  }

  /** One timer set to the deadline itself; re-checked on firing because timers may wake a little early. */
  private scheduleDeadline(): void {
    this.clearDeadlineTimer();
    if (this.deadline === null || this.exited) return;
    const remaining = this.deadline - Date.now();
    if (remaining <= 0) {
      this.fenceNow();
      return;
    }
    this.deadlineTimer = setTimeout(() => this.scheduleDeadline(), Math.min(remaining, MAX_TIMER_MS));
  }

  private clearDeadlineTimer(): void {
    if (this.deadlineTimer) clearTimeout(this.deadlineTimer);
    this.deadlineTimer = null;
  }

  /** The dead man's switch fires: immediate shutdown now, SIGKILL if that is not enough. */
  private fenceNow(): void {
    if (this.fenced || this.exited) return;
    this.fenced = true;
    this.log(`deadline ${new Date(this.deadline ?? 0).toISOString()} passed without a new arm: immediate shutdown of the postmaster`);
    this.signalPostmaster('SIGQUIT');
    this.killTimer = setTimeout(() => this.killPostmasterTree('postmaster still alive after SIGQUIT'), FENCE_KILL_GRACE_MS);
  }

  /** The leader's agent is gone: fast shutdown (its WAL senders hand the replicas every commit), then immediate, then SIGKILL. */
  private stopOnOwnAccount(reason: string): void {
    if (this.exited) return;
    this.log(`${reason}: fast shutdown of the postmaster`);
    this.signalPostmaster('SIGINT');
    this.killTimer = setTimeout(() => {
      this.log(`postmaster still alive ${OWN_FAST_STOP_MS} ms after SIGINT: immediate shutdown`);
      this.signalPostmaster('SIGQUIT');
      this.killTimer = setTimeout(() => this.killPostmasterTree('postmaster still alive after SIGQUIT'), FENCE_KILL_GRACE_MS);
    }, OWN_FAST_STOP_MS);
  }

  /** SIGKILL of the postmaster and of every process it started: orphaned backends must not serve on. */
  private killPostmasterTree(reason: string): void {
    if (this.exited || !this.postmasterPid) return;
    this.killedTree = descendantsOf(this.postmasterPid);
    this.log(`${reason}: SIGKILL of the postmaster and ${this.killedTree.length} processes it started`);
    this.signalPostmaster('SIGKILL');
    for (const pid of this.killedTree) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }

  /** Fast shutdown for the fence's own reasons (it was told to stop, or it cannot serve agents); never leaves the postmaster unfenced. */
  stopPostmasterFast(reason: string): void {
    this.log(`${reason}: fast shutdown of the postmaster`);
    this.signalPostmaster('SIGINT');
  }

  private signalPostmaster(signal: NodeJS.Signals): void {
    const child = this.postmaster;
    if (!child || this.exited || child.exitCode !== null || child.signalCode !== null) return;
    try {
      child.kill(signal);
    } catch (error) {
      this.log(`cannot send ${signal} to the postmaster: ${String(error)}`);
    }
  }

  private onPostmasterExit(code: number | null, signal: NodeJS.Signals | null): void {
    this.log(`postmaster ${this.postmasterPid} exited (code ${code}, signal ${signal}, requested ${this.requested}, fenced ${this.fenced})`);
    const exit: PostmasterExitEvent = { event: 'exit', pid: this.postmasterPid, code, signal, requested: this.requested, fenced: this.fenced };
    this.recordExit(exit);
    // Only a postmaster whose every process is gone may let another node promote.
    void this.treeGone()
      .then(() => this.term.afterPostmasterExit(exit, () => this.tellAgents(exit)))
      .catch((error) => this.log(`ending the term failed: ${String(error)}`))
      .finally(() => this.finish(exit));
  }

  private async treeGone(): Promise<void> {
    const until = Date.now() + TREE_GONE_WAIT_MS;
    while (this.killedTree.some(isRunningProcess)) {
      if (Date.now() >= until) throw new Error(`processes ${this.killedTree.filter(isRunningProcess).join(', ')} outlived SIGKILL`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** The exit goes to its file at once: it must survive even if the fence dies before telling anyone. */
  private recordExit(exit: PostmasterExitEvent): void {
    this.exited = true;
    this.clearDeadlineTimer();
    if (this.killTimer) clearTimeout(this.killTimer);
    try {
      const temporary = `${this.paths.exitFile}.tmp`;
      writeFileSync(temporary, JSON.stringify({ ...exit, at: Date.now() }) + '\n');
      renameSync(temporary, this.paths.exitFile);
    } catch (error) {
      this.log(`cannot write ${this.paths.exitFile}: ${String(error)}`);
    }
  }

  /**
   * Stops serving and tells every agent connected. Done as soon as the exit is known (a live agent
   * restarts PostgreSQL at once, under a new fence whose socket and pid file must not be removed by this
   * one later), even while this fence stays on to end a term.
   */
  private tellAgents(exit: PostmasterExitEvent): void {
    if (this.told) return;
    this.told = true;
    this.server?.close();
    rmSync(this.paths.socket, { force: true });
    rmSync(this.paths.pidFile, { force: true });
    const line = JSON.stringify(exit) + '\n';
    for (const socket of this.clients) socket.end(line);
  }

  /** Tells agents if not done yet, then exits once they have read it. */
  private finish(exit: PostmasterExitEvent): void {
    if (this.finished) return;
    this.finished = true;
    this.tellAgents(exit);
    const done = () => this.onDone(0);
    if (this.clients.size === 0) {
      done();
      return;
    }
    const timer = setTimeout(done, EXIT_FLUSH_MS);
    const check = () => {
      if (this.clients.size === 0) {
        clearTimeout(timer);
        done();
      }
    };
    for (const socket of this.clients) socket.once('close', () => setImmediate(check));
  }

  private send(socket: Socket, event: FenceEvent): void {
    if (!socket.destroyed) socket.write(JSON.stringify(event) + '\n');
  }

  /** True when a live fence greets us on the socket (one that is already exiting hangs up without a hello). */
  private anotherFenceAnswers(): Promise<boolean> {
    return new Promise((resolve) => {
      const probe = createConnection(this.paths.socket);
      const settle = (answer: boolean) => {
        clearTimeout(timer);
        probe.destroy();
        resolve(answer);
      };
      const timer = setTimeout(() => settle(false), 1000);
      probe.on(
        'data',
        createLineParser((message) => {
          if ((message as FenceEvent).event === 'hello') settle(true);
        }),
      );
      probe.once('error', () => settle(false));
      probe.once('close', () => settle(false));
    });
  }
}
