import { TimerClock } from '../common/clock';
import { Logger } from '../common/logger';
import { EventLog } from '../events/event-log';
import { pendingRestart } from '../projections/schedule';
import { NodeEvents } from './node-events';
import { NodeView, ScheduledRestart } from './node-view';
import { publishedRestart, restartDue, restartFilterMismatch } from './scheduled-restart';

export interface RestartSchedulerDeps {
  name: string;
  clock: TimerClock;
  logger: Logger;
  events: NodeEvents;
  /** Runs one HA cycle now. */
  wake: () => void;
  /** Restarts PostgreSQL now, with the restart's own timeout. */
  restartNow: (timeoutSeconds?: number) => Promise<unknown>;
}

/**
 * The `scheduler` actor of the design: the node's one scheduled restart and the timer that wakes
 * the HA cycle at a scheduled operation's time. Every change is a recorded cluster fact, which is
 * also how a schedule survives an agent restart (`restore`).
 */
export class RestartScheduler {
  private scheduled: ScheduledRestart | null = null;
  private cancelWake: (() => void) | null = null;

  constructor(private readonly deps: RestartSchedulerDeps) {}

  get current(): ScheduledRestart | null {
    return this.scheduled;
  }

  schedule(restart: ScheduledRestart): boolean {
    if (this.scheduled) return false;
    this.scheduled = restart;
    this.deps.events.recordCluster(
      'restart.scheduled',
      `restart of ${this.deps.name} scheduled at ${restart.schedule}`,
      {
        node: this.deps.name,
        schedule: restart.schedule,
        filters: { ...publishedRestart(restart), postmaster_start_time: restart.postmasterStartTime },
      },
    );
    this.wakeAt(restart.at);
    return true;
  }

  cancel(reason = 'scheduled restart deleted'): boolean {
    if (!this.scheduled) return false;
    this.deps.events.recordCluster('restart.cancelled', reason, {
      node: this.deps.name,
      schedule: this.scheduled.schedule,
    });
    this.scheduled = null;
    return true;
  }

  /** A restart scheduled before this agent (re)started is taken back from the event log. */
  restore(eventLog: EventLog): void {
    const pending = pendingRestart(eventLog.projections().schedule, this.deps.name);
    if (!pending || this.scheduled) return;
    const filters = pending.filters ?? {};
    this.scheduled = {
      at: Date.parse(pending.at),
      schedule: pending.at,
      role: filters.role as string | undefined,
      postgres_version: filters.postgres_version as string | undefined,
      restart_pending: filters.restart_pending === true ? true : undefined,
      timeout: filters.timeout as number | undefined,
      postmasterStartTime: (filters.postmaster_start_time as string | undefined) ?? null,
    };
    this.deps.logger.info(`restored the restart scheduled at ${pending.at} from the event log`);
    this.wakeAt(this.scheduled.at);
  }

  /** Runs a due restart (reference 3.7): cancelled when stale or overtaken, skipped when its filters no longer hold. */
  evaluate(view: NodeView, loopWaitSeconds: number, wallJumpMs = 0): void {
    const restart = this.scheduled;
    if (!restart) return;
    const { name, events, logger } = this.deps;
    const due = restartDue(restart, this.deps.clock.now(), loopWaitSeconds, wallJumpMs);
    if (due === 'wait') return;
    if (due === 'stale') {
      this.scheduled = null;
      events.recordCluster('restart.expired', `scheduled restart at ${restart.schedule} is stale, removed`, {
        node: name,
        schedule: restart.schedule,
      });
      return;
    }
    if (restart.postmasterStartTime && view.sample && restart.postmasterStartTime !== view.sample.postmasterStartTime) {
      this.cancel('postmaster restarted since the restart was scheduled: cancelled');
      return;
    }
    const mismatch = restartFilterMismatch(restart, view);
    this.scheduled = null;
    if (mismatch) {
      logger.info(`not proceeding with the restart: ${mismatch}`);
      events.recordCluster('restart.skipped', mismatch, { node: name, schedule: restart.schedule });
      return;
    }
    logger.info('restart initiated');
    events.recordCluster('restart.executed', 'restart initiated', { node: name, schedule: restart.schedule });
    void this.deps.restartNow(restart.timeout);
  }

  /** Runs one cycle at `at` (a scheduled operation), besides the regular ones. */
  wakeAt(at: number): void {
    this.cancelWake?.();
    this.cancelWake = this.deps.clock.setTimer(this.deps.wake, at - this.deps.clock.now());
  }

  stop(): void {
    this.cancelWake?.();
  }
}
