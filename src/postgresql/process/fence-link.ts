import { existsSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { Observable, Subject } from 'rxjs';
import { FenceConnection } from '../fence/fence-client';
import {
  FenceJournalEntry,
  fencePaths,
  FenceTerm,
  FenceWatchdog,
  FenceWatchdogState,
  PostmasterExitEvent,
} from '../fence/fence-protocol';
import { FenceState, PostmasterExit } from '../postgres.port';
import { AdapterLog } from './local-postgres';
import { isProcessAlive, waitUntil } from './os-process';
import { readExitRecord, toPostmasterExit, withLastLog } from './postmaster-log';

export type FencePaths = ReturnType<typeof fencePaths>;

/** When the fence vanishes, how long its postmaster may take to follow before it counts as unfenced. */
const FENCE_LOSS_SETTLE_MS = 200;

/**
 * This handle's connection to the fence (see `fence/fence_postmaster.py`) and the postmaster it runs: which pid
 * is ours, and the stream of its exits as the fence reports them.
 */
export class FenceLink {
  private readonly exitSubject = new Subject<PostmasterExit>();
  private connection: FenceConnection | null = null;
  private pid: number | null = null;
  /** The deadline last sent to (or announced by) the connected fence; null when disarmed. */
  private armedDeadline: number | null = null;
  /** The term sent with it, as sent: the HA loop re-arms every cycle, mostly with what the fence already has. */
  private armedTerm = '';
  /** The deadline last armed (null: disarmed), given to the fence of the next postmaster this handle starts. */
  private wantedDeadline: number | null = null;
  /** The watchdog as the connected fence last reported it. */
  private watchdogState: FenceWatchdogState | null = null;
  /** Told the pid of a postmaster that outlived its fence, to put it under a new one. */
  private onUnfenced: ((pid: number) => void) | null = null;

  constructor(
    private readonly paths: FencePaths,
    private readonly log?: AdapterLog,
  ) {}

  /** The fence this handle talks to; null once it reported the exit or went away. */
  get fence(): FenceConnection | null {
    return this.connection;
  }

  /** The postmaster this handle runs or adopted; it outlives a lost fence until its exit is known. */
  get postmasterPid(): number | null {
    return this.pid;
  }

  /**
   * Postmaster exits as the fence reports them (pushed over its socket, not polled). When the fence itself
   * vanishes without an exit event (killed), the postmaster is checked at once (allowing it 200 ms to
   * follow a fence killed with its process group): gone → an exit is emitted (code and signal unknown);
   * still alive → nothing is emitted, and `whenUnfenced`'s handler is told (it puts the postmaster under a new
   * fence). Until then it runs unfenced: `postmasterPid()` keeps its pid, and `stop` signals it directly and emits
   * its exit.
   */
  exits(): Observable<PostmasterExit> {
    return this.exitSubject.asObservable();
  }

  /** `handler` is told the pid of a postmaster that outlived its fence (killed alone). */
  whenUnfenced(handler: (pid: number) => void): void {
    this.onUnfenced = handler;
  }

  /** Connects to the fence (if one answers) and makes it this handle's fence. */
  async connect(timeoutMs: number): Promise<FenceConnection | null> {
    let connection: FenceConnection;
    try {
      connection = await FenceConnection.connect(this.paths.socket, timeoutMs);
    } catch {
      return null;
    }
    const previous = this.connection;
    this.connection = connection;
    this.pid = connection.hello.pid;
    this.armedDeadline = connection.hello.deadline;
    this.armedTerm = '';
    this.watchdogState = connection.hello.watchdog ?? null;
    if (previous && previous !== connection) void previous.close();
    // May deliver an exit that came with the hello at once, which clears this.connection again.
    connection.attach({
      onExit: (exit) => this.onFenceExit(connection, exit),
      onLost: () => void this.onFenceLost(connection),
      onWatchdog: (state) => this.onWatchdog(connection, state),
    });
    return connection;
  }

  /**
   * Sets the fence's deadline (epoch ms) and the term it guards, if any; remembers the deadline for the next
   * fence when not connected to one (the term, which may hold etcd credentials, goes over the socket only).
   * Each arm with a `watchdog` pets it: the HA loop's refresh moves the deadline, so every cycle sends one.
   */
  arm(deadlineEpochMs: number, term?: FenceTerm, watchdog?: FenceWatchdog): void {
    this.wantedDeadline = deadlineEpochMs;
    if (!this.connection) return;
    const termSent = term || watchdog ? JSON.stringify([term ?? null, watchdog ?? null]) : '';
    if (deadlineEpochMs === this.armedDeadline && termSent === this.armedTerm) return;
    this.connection.send({ op: 'arm', deadline: deadlineEpochMs, term, watchdog });
    this.armedDeadline = deadlineEpochMs;
    this.armedTerm = termSent;
  }

  /** Reads and removes the fence's journal (renamed first, so a fence appending meanwhile starts a new file). */
  takeJournal(): FenceJournalEntry[] {
    const taken = `${this.paths.journal}.taken`;
    // Asked every HA cycle and almost always absent: a failed rename's exception costs more than a look.
    if (!existsSync(this.paths.journal)) return [];
    try {
      renameSync(this.paths.journal, taken);
    } catch {
      return [];
    }
    try {
      return readFileSync(taken, 'utf8')
        .split('\n')
        .filter((line) => line.trim())
        .flatMap((line) => {
          try {
            return [JSON.parse(line) as FenceJournalEntry];
          } catch {
            return [];
          }
        });
    } finally {
      rmSync(taken, { force: true });
    }
  }

  disarm(): void {
    this.wantedDeadline = null;
    if (this.armedDeadline === null) return;
    this.connection?.send({ op: 'disarm' });
    this.armedDeadline = null;
    this.armedTerm = '';
  }

  /** Whether a fence is connected, and the deadline it was last given (from memory). */
  state(): FenceState {
    return {
      connected: this.connection !== null,
      deadline: this.connection ? this.armedDeadline : null,
      watchdog: this.connection ? this.watchdogState : null,
    };
  }

  /** The deadline a fence started now is armed with, if any. */
  get launchDeadline(): number | null {
    return this.wantedDeadline;
  }

  /** Closes the fence socket after flushing what was sent; the fence (armed or not) and the postmaster keep running. */
  async detach(): Promise<void> {
    this.wantedDeadline = null;
    const fence = this.connection;
    this.connection = null;
    this.pid = null;
    await fence?.close();
  }

  /** A stopped postmaster is no longer this handle's (unless another was adopted meanwhile). */
  forgetPostmaster(pid: number): void {
    if (this.pid === pid) this.pid = null;
  }

  /** Emits an exit nobody else will report: that of a postmaster that had lost its fence. */
  reportExit(exit: PostmasterExit): void {
    this.exitSubject.next(exit);
  }

  /**
   * Keeps every exit emitted from now on (`cancel` stops): `of(pid)` resolves with that pid's exit, emitted before
   * the call or after, so a postmaster whose pid is known only later is watched from before it was started. An exit of an earlier postmaster reported late (its fence
   * lost) is not the new one's: taken for it, it ended a start whose server went on running unseen.
   */
  recordExits(): { of(pid: number): Promise<PostmasterExit>; cancel(): void } {
    const seen: PostmasterExit[] = [];
    const waiting: { pid: number; resolve: (exit: PostmasterExit) => void }[] = [];
    const subscription = this.exitSubject.subscribe((exit) => {
      seen.push(exit);
      for (const waiter of waiting) if (waiter.pid === exit.pid) waiter.resolve(exit);
    });
    return {
      of: (pid) =>
        new Promise<PostmasterExit>((resolve) => {
          const known = seen.find((exit) => exit.pid === pid);
          if (known) resolve(known);
          else waiting.push({ pid, resolve });
        }),
      cancel: () => subscription.unsubscribe(),
    };
  }

  private onWatchdog(connection: FenceConnection, state: FenceWatchdogState): void {
    if (connection !== this.connection) return;
    const wasRunning = this.watchdogState?.running === true;
    this.watchdogState = state;
    const device = state.device ?? '';
    if (state.error)
      this.log?.(state.required ? 'warning' : 'info', `watchdog ${device} could not be activated: ${state.error}`);
    else if (state.running && state.reason) {
      // The agent failed to keep its term: nothing it does now cancels the reset (docs/configuration.md).
      this.log?.(
        'warning',
        `watchdog ${device} ${state.reason}: it fires ${state.timeout} seconds after its last keepalive`,
      );
    } else if (!state.running)
      this.log?.('info', `watchdog ${device} ${state.reason ?? 'closed with the magic close'}`);
    else
      this.log?.(
        'info',
        `watchdog ${device} ${wasRunning ? 'updated' : 'activated'} with ${state.timeout} second timeout`,
      );
  }

  private onFenceExit(connection: FenceConnection, exit: PostmasterExitEvent): void {
    if (connection !== this.connection) return;
    this.connection = null;
    this.pid = null;
    this.exitSubject.next(withLastLog(toPostmasterExit(exit), this.paths.postmasterLog));
  }

  private async onFenceLost(connection: FenceConnection): Promise<void> {
    if (connection !== this.connection) return;
    this.connection = null;
    const pid = connection.hello.pid;
    // A fence killed together with its postmaster (a process-group kill) may see the postmaster outlive
    // it by a moment: give it a short while before calling it unfenced.
    await waitUntil(() => !isProcessAlive(pid), FENCE_LOSS_SETTLE_MS);
    if (this.connection || this.pid !== pid) return; // adopted or restarted meanwhile
    const record = readExitRecord(this.paths.exitFile);
    if (record && record.pid === pid) {
      this.pid = null;
      this.exitSubject.next(withLastLog(toPostmasterExit(record), this.paths.postmasterLog));
    } else if (!isProcessAlive(pid)) {
      this.pid = null;
      this.exitSubject.next({ pid, code: null, signal: null, requested: false, fenced: false });
    } else {
      this.log?.(
        'warning',
        `the fence went away but postmaster ${pid} still runs, now unfenced: putting it under a new fence`,
      );
      this.onUnfenced?.(pid);
    }
  }
}
