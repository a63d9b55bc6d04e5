import { RecordedEvent } from '../events/event';
import { ApiClient } from './client';
import { elapsed } from './format';

/** What a task of a node's HA loop does, as a progress phase. */
const TASK_PHASES: Record<string, string> = {
  switchover: 'leader demoting (switchover)',
  demote: 'demoting',
  promote: 'promoting',
  rejoin: 'rejoining the new leader',
  clone: 'cloning from the leader',
  reinitialize: 'reinitializing: new data directory from the leader',
  restart: 'restarting PostgreSQL',
};

/**
 * One event as a progress phase (`node2 leader demoting (switchover)`), or null when it says
 * nothing a person follows (HA verdicts, slots, replica reconfiguration...).
 */
export function describeEvent(event: RecordedEvent): string | null {
  const data = (event.data ?? {}) as Record<string, unknown>;
  const cause = (data.event ?? {}) as Record<string, unknown>;
  switch (event.type) {
    case 'switchover.requested':
      return `switchover requested: ${String(data.leader ?? 'the leader')} -> ${String(data.member ?? (data.site ? `a member of site ${String(data.site)}` : 'any eligible member'))}`;
    case 'switchover.scheduled':
      return `switchover scheduled`;
    case 'switchover.executed':
      return `switchover executed`;
    case 'switchover.cancelled':
      return `scheduled switchover cancelled`;
    case 'leader.released':
      return `${event.node} released the leader lock`;
    case 'leader.acquired':
      return `${event.node} acquired the leader lock`;
    case 'leader.lost':
      return `${event.node} lost the leader lock`;
    case 'leader.promoted':
      return `${event.node} promoted, timeline ${String(data.timeline ?? '?')}`;
    case 'restart.executed':
    case 'restart.skipped':
    case 'restart.expired':
    case 'restart.cancelled':
    case 'restart.scheduled':
      return `${event.node} ${event.type.replace('.', ' ')}`;
    case 'node.reinitialize':
      return `${String(data.node ?? event.node)} reinitialize requested (source ${String(data.source ?? '?')})`;
    case 'replica.created':
      return `${event.node} replica created (${event.cause})`;
    case 'replica.method_failed':
      return `${event.node} replica method failed: ${event.cause}`;
    case 'cluster.paused':
      return 'cluster paused';
    case 'cluster.resumed':
      return 'cluster resumed';
    case 'task.transition': {
      const task = String(cause.task ?? '');
      // `start` and `stop` tasks show as PostgreSQL's own transitions.
      if (task === 'start' || task === 'stop') return null;
      if (cause.type === 'TASK_STARTED') return `${event.node} ${TASK_PHASES[task] ?? `${task} started`}`;
      if (cause.type === 'TASK_ENDED')
        return `${event.node} ${task} ${cause.error ? `failed: ${String(cause.error)}` : 'done'}`;
      return null;
    }
    case 'role.transition':
      return event.from === event.to ? null : `${event.node} role ${event.from ?? '?'} -> ${event.to ?? '?'}`;
    case 'postgres.transition': {
      const from = (event.from ?? '').split('.')[0];
      const to = (event.to ?? '').split('.')[0];
      return from === to ? null : `${event.node} PostgreSQL ${to}`;
    }
    default:
      return null;
  }
}

/** Progress lines of an operation, read from `/events/stream` of the node statorctl talks to. */
/**
 * How long a shown event waits for others that happened before it. Events of several nodes reach the
 * stream in store order, which is not the order they happened in: a leader's `leader.released` can be
 * stored after the candidate's `leader.acquired` when its append waited behind one in flight.
 */
export const REORDER_WINDOW_MS = 500;

export class Progress {
  private readonly seen: RecordedEvent[] = [];
  /** Events to show, held for REORDER_WINDOW_MS after the first of them and then shown in the order of `at`. */
  private held: RecordedEvent[] = [];
  private showTimer: NodeJS.Timeout | null = null;
  private readonly waiters: Array<{
    test: (event: RecordedEvent) => boolean;
    resolve: (event: RecordedEvent | null) => void;
  }> = [];
  private readonly abort = new AbortController();
  private ended: Promise<void> = Promise.resolve();

  private constructor(
    private readonly write: (text: string) => void,
    readonly startMs: number,
    private readonly now: () => number,
    /** Only events of these nodes (and cluster facts about them) are shown; empty: every node. */
    private readonly nodes: string[],
  ) {}

  /**
   * Connects to the event stream before the operation is sent, so no phase is missed.
   * @throws UnreachableError or ApiError when the stream cannot be opened.
   */
  static async start(
    client: ApiClient,
    write: (text: string) => void,
    options: { now?: () => number; nodes?: string[] } = {},
  ): Promise<Progress> {
    const now = options.now ?? Date.now;
    const progress = new Progress(write, now(), now, options.nodes ?? []);
    const { ended } = await client.stream(
      '/events/stream',
      (message) => progress.onMessage(message.data),
      progress.abort.signal,
    );
    progress.ended = ended;
    return progress;
  }

  /** A line of the operation's own (request sent, answer), on the same clock, after the events held so far. */
  line(text: string): void {
    this.showHeld();
    this.print(text);
  }

  /** Resolves with the first event (already seen or to come) that passes `test`, or null after `timeoutMs`. */
  waitFor(test: (event: RecordedEvent) => boolean, timeoutMs: number): Promise<RecordedEvent | null> {
    const found = this.seen.find(test);
    if (found) return Promise.resolve(found);
    return new Promise((resolve) => {
      const waiter = {
        test,
        resolve: (event: RecordedEvent | null) => {
          clearTimeout(timer);
          resolve(event);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        resolve(null);
      }, timeoutMs);
      this.waiters.push(waiter);
      // A broken stream will send nothing more.
      const giveUp = () => {
        if (!this.waiters.includes(waiter)) return;
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve(null);
      };
      this.ended.then(giveUp, giveUp);
    });
  }

  stop(): void {
    this.showHeld();
    this.abort.abort();
    for (const waiter of this.waiters.splice(0)) waiter.resolve(null);
  }

  private onMessage(data: string): void {
    let event: RecordedEvent;
    try {
      event = JSON.parse(data) as RecordedEvent;
    } catch {
      return;
    }
    if (this.nodes.length > 0 && !this.concerns(event)) return;
    this.seen.push(event);
    if (describeEvent(event)) this.hold(event);
    for (const waiter of [...this.waiters]) {
      if (waiter.test(event)) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve(event);
      }
    }
  }

  private print(text: string): void {
    this.write(`${elapsed(this.startMs, this.now())} ${text}\n`);
  }

  private hold(event: RecordedEvent): void {
    this.held.push(event);
    this.showTimer ??= setTimeout(() => this.showHeld(), REORDER_WINDOW_MS);
  }

  /** Shows the held events in the order they happened (stable for equal times), and clears them. */
  private showHeld(): void {
    if (this.showTimer) clearTimeout(this.showTimer);
    this.showTimer = null;
    const events = this.held.sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
    this.held = [];
    for (const event of events) this.print(describeEvent(event)!);
  }

  private concerns(event: RecordedEvent): boolean {
    const subject = (event.data as Record<string, unknown> | undefined)?.node;
    return this.nodes.includes(event.node) || (typeof subject === 'string' && this.nodes.includes(subject));
  }
}

/** The event that ends a switchover or failover: a role transition to primary, on `candidate` if named. */
export function becamePrimary(candidate: string | undefined, oldLeader: string | undefined) {
  return (event: RecordedEvent) =>
    event.type === 'role.transition' &&
    (event.to ?? '').split('.')[0] === 'primary' &&
    event.node !== oldLeader &&
    (!candidate || event.node === candidate);
}

/** The old leader following again (a role transition to replica). */
export function becameReplica(node: string) {
  return (event: RecordedEvent) =>
    event.type === 'role.transition' && event.node === node && (event.to ?? '').split('.')[0] === 'replica';
}

/** A node's task of this name ended (with or without an error). */
export function taskEnded(node: string, task: string) {
  return (event: RecordedEvent) => {
    const cause = ((event.data ?? {}) as { event?: { type?: string; task?: string } }).event;
    return (
      event.type === 'task.transition' && event.node === node && cause?.type === 'TASK_ENDED' && cause.task === task
    );
  };
}
