import { ChildProcess, spawn } from 'node:child_process';
import { Subscription } from 'rxjs';
import { Clock } from '../common/clock';
import { splitCommandLine } from '../common/command-line';
import { eventTime } from '../common/recorded-event';
import { CallbackAction } from '../config/config.types';
import { LocalEvent } from '../events/event-recorder';
import { EventSink } from '../events/transition-recorder';
import { callbackFor, CallbackCall } from './callback-policy';

/** How long a callback may run before it is killed; a callback never holds up anything else. */
export const CALLBACK_TIMEOUT_MS = 60_000;

export interface CallbackRunnerOptions {
  commands: Partial<Record<CallbackAction, string>>;
  scope: string;
  node: string;
  events: EventSink;
  clock: Clock;
  log: { info(message: string): void; warning(message: string): void };
  timeoutMs?: number;
}

type Outcome = 'exited' | 'timed out' | 'superseded' | 'failed to start';

interface Running {
  child: ChildProcess;
  call: CallbackCall;
  startedAt: number;
  ending: Outcome | null;
  timer: NodeJS.Timeout;
  /** A process that fails to start reports both 'error' and 'exit'; only the first is recorded. */
  finished: boolean;
}

/**
 * Runs `postgresql.callbacks` as the reference does: the command line split into words, with
 * `<action> <role> <scope>` appended, run without a shell in the agent's working directory, its
 * output going to the agent's. One callback runs at a time: a new one kills the one still running
 * (on_reload has its own slot, so a reload never cuts a role change short). A callback that runs
 * past its deadline is killed with its process group. The HA loop never waits for a callback.
 * Each call is recorded on `node/<name>/callbacks`: `callback.started`, then `callback.finished`
 * with its exit code or signal, duration and outcome.
 */
export class CallbackRunner {
  private readonly slots = new Map<'main' | 'reload', Running>();
  private currentRole: string | null = null;
  private subscription: Subscription | null = null;

  constructor(private readonly options: CallbackRunnerOptions) {}

  /** Fires callbacks for the node's recorded transitions (role changes are tracked from the same feed). */
  follow(transitions: { subscribe(next: (event: LocalEvent) => void): Subscription }): void {
    this.subscription = transitions.subscribe((event) => {
      const call = callbackFor(event, this.currentRole);
      if (event.type === 'role.transition') this.currentRole = (event.to ?? '').split('.')[0];
      if (call) this.run(call);
    });
  }

  /**
   * Stops following. A callback still running is left to finish (an `on_stop` fired by the shutdown
   * itself typically moves a virtual IP away), as the reference leaves it; its end is not recorded.
   */
  stop(): void {
    this.subscription?.unsubscribe();
    for (const running of this.slots.values()) clearTimeout(running.timer);
  }

  run(call: CallbackCall): void {
    const command = this.options.commands[call.action];
    if (!command) return;
    const words = splitCommandLine(command);
    if (!words || words.length === 0) return;
    const slot = call.action === 'on_reload' ? 'reload' : 'main';
    const previous = this.slots.get(slot);
    if (previous) this.end(previous, 'superseded');

    const argv = [...words.slice(1), call.action, call.role, this.options.scope];
    const startedAt = this.options.clock.now();
    this.record('callback.started', `${call.action} ${call.role}`, {
      action: call.action,
      role: call.role,
      command: words[0],
    });
    // Its own process group, so that a timeout or a newer callback ends the whole tree.
    const child = spawn(words[0], argv, { detached: true, stdio: ['ignore', 'inherit', 'inherit'] });
    const running: Running = {
      child,
      call,
      startedAt,
      ending: null,
      finished: false,
      timer: setTimeout(() => this.end(running, 'timed out'), this.options.timeoutMs ?? CALLBACK_TIMEOUT_MS),
    };
    this.slots.set(slot, running);
    child.once('error', (error) => {
      running.ending ??= 'failed to start';
      this.finish(slot, running, null, null, error.message);
    });
    child.once('exit', (code, signal) => this.finish(slot, running, code, signal, null));
  }

  private end(running: Running, outcome: Outcome): void {
    if (running.ending) return;
    running.ending = outcome;
    try {
      process.kill(-running.child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }

  private finish(
    slot: 'main' | 'reload',
    running: Running,
    code: number | null,
    signal: string | null,
    error: string | null,
  ): void {
    clearTimeout(running.timer);
    if (this.slots.get(slot) === running) this.slots.delete(slot);
    if (running.finished) return;
    running.finished = true;
    const outcome = running.ending ?? 'exited';
    const durationMs = this.options.clock.now() - running.startedAt;
    const { action, role } = running.call;
    const data = { action, role, outcome, exitCode: code, signal, durationMs, ...(error ? { error } : {}) };
    this.record('callback.finished', `${action} ${role}: ${outcome}`, data);
    const described = `${action} callback ${outcome}${code !== null ? ` with code ${code}` : signal ? ` (${signal})` : ''} after ${durationMs} ms`;
    if (outcome === 'exited' && code === 0) this.options.log.info(described);
    else this.options.log.warning(`${described}${error ? `: ${error}` : ''}`);
  }

  private record(type: string, cause: string, data: Record<string, unknown>): void {
    const { node, clock } = this.options;
    this.options.events.record({
      stream: `node/${node}/callbacks`,
      type,
      at: eventTime(clock.now()),
      node,
      from: null,
      to: null,
      cause,
      data,
    });
  }
}
