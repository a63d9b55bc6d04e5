import { TimerClock } from '../common/clock';
import { Logger } from '../common/logger';
import { EventLog } from '../events/event-log';
import { pendingRestart } from '../projections/schedule';
import { HaMemoryEvent } from './ha-memory.machine';
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
  /** The scheduled restart as the node's memory holds it, and how it is changed there (a recorded transition). */
  scheduled: () => ScheduledRestart | null;
  remember: (event: Extract<HaMemoryEvent, { type: 'RESTART_SCHEDULED' | 'RESTART_UNSCHEDULED' }>) => void;
}

/**
 * What the `restartScheduler` actor of the node's system runs (node-system.ts): the node's one scheduled
 * restart and the timer that wakes the HA cycle at a scheduled operation's time. The restart itself is
 * in the node's memory (a recorded transition, so a replay rebuilds it); every change is also a recorded
 * cluster fact, which is how a schedule survives an agent restart (`restore`).
 */
export class RestartScheduler {
  private cancelWake: (() => void) | null = null;

  constructor(private readonly deps: RestartSchedulerDeps) {}

  get current(): ScheduledRestart | null {
    return this.deps.scheduled();
  }

  schedule(restart: ScheduledRestart): boolean {
    if (this.current) return false;
    this.deps.remember({ type: 'RESTART_SCHEDULED', restart });
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
    const restart = this.current;
    if (!restart) return false;
    this.deps.events.recordCluster('restart.cancelled', reason, {
      node: this.deps.name,
      schedule: restart.schedule,
    });
    this.deps.remember({ type: 'RESTART_UNSCHEDULED', outcome: 'cancelled' });
    return true;
  }

  /** A restart scheduled before this agent (re)started is taken back from the event log. */
  restore(eventLog: EventLog): void {
    const pending = pendingRestart(eventLog.projections().schedule, this.deps.name);
    if (!pending || this.current) return;
    const filters = pending.filters ?? {};
    const restart: ScheduledRestart = {
      at: Date.parse(pending.at),
      schedule: pending.at,
      role: filters.role as string | undefined,
      postgres_version: filters.postgres_version as string | undefined,
      restart_pending: filters.restart_pending === true ? true : undefined,
      timeout: filters.timeout as number | undefined,
      postmasterStartTime: (filters.postmaster_start_time as string | undefined) ?? null,
    };
    this.deps.remember({ type: 'RESTART_SCHEDULED', restart });
    this.deps.logger.info(`restored the restart scheduled at ${pending.at} from the event log`);
    this.wakeAt(restart.at);
  }

  /** Runs a due restart (reference 3.7): cancelled when stale or overtaken, skipped when its filters no longer hold. */
  evaluate(view: NodeView, loopWaitSeconds: number, wallJumpMs = 0): void {
    const restart = this.current;
    if (!restart) return;
    const { name, events, logger } = this.deps;
    const due = restartDue(restart, this.deps.clock.now(), loopWaitSeconds, wallJumpMs);
    if (due === 'wait') return;
    if (due === 'stale') {
      this.deps.remember({ type: 'RESTART_UNSCHEDULED', outcome: 'expired' });
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
    this.deps.remember({ type: 'RESTART_UNSCHEDULED', outcome: mismatch ? 'skipped' : 'executed' });
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
