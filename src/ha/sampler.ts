import { TimerClock } from '../common/clock';
import { errorText } from '../common/error-text';
import { Logger } from '../common/logger';
import { PostgresQuery, PostgresSample, SlotReading } from '../postgresql/postgres.port';

/** While readings change, and after any transition: every second. */
export const BUSY_SAMPLE_INTERVAL_MS = 1_000;
/**
 * While nothing changes, the interval doubles up to this: the staleness bound of an idle server's
 * health answers (any change of role or state is a transition, sampled at once; the HA cycle also
 * takes a reading every loop_wait).
 */
export const IDLE_SAMPLE_INTERVAL_MS = 4_000;

/**
 * How long the HA cycle waits for its reading before it goes on with the last one; a server silent that long is asked
 * nothing more in the cycle (the leader's duties wait for the next).
 */
export const CYCLE_READING_WAIT_MS = 2_000;

/** PostgreSQL's query_canceled: here, the monitoring query ran past statement_timeout. */
const QUERY_CANCELED = '57014';

/**
 * The `sampler` actor of the design: reads PostgreSQL's status every second while anything moves,
 * less often (up to every 4 s) while every reading equals the last one, and at once after each
 * transition, so the API answers from memory at little cost on an idle node; and keeps what the HA
 * cycle needs to judge the server: when it last answered at all (a hung server stops moving it)
 * and since when a replica has not been streaming.
 */
export class Sampler {
  private current: PostgresSample | null = null;
  private takenAt = 0;
  private lastAnswerAt = 0;
  private notStreamingFrom = 0;
  private cancelTimer: (() => void) | null = null;
  private interval = BUSY_SAMPLE_INTERVAL_MS;
  /** The last reading as text, to tell an idle server from a moving one. */
  private lastFingerprint = '';
  private stopped = false;
  /** The reading in progress, and the one callers meanwhile wait for after it. */
  private reading: Promise<void> | null = null;
  private nextReading: Promise<void> | null = null;
  /** Since when the monitoring query keeps hitting statement_timeout (0: it does not). */
  private timingOutSince = 0;

  constructor(
    private readonly query: PostgresQuery,
    private readonly clock: TimerClock,
    private readonly logger: Logger,
    /** Whether there is a running server to read. */
    private readonly serverRunning: () => boolean,
    /** Called after each successful reading. */
    private readonly onSample: (sample: PostgresSample) => void,
    /**
     * The longest idle period allowed now: half of postgres_unresponsive_timeout, so that an idle but
     * healthy server is never taken for a hung one between two readings.
     */
    private readonly idleCeilingMs: () => number = () => IDLE_SAMPLE_INTERVAL_MS,
  ) {}

  get sample(): PostgresSample | null {
    return this.current;
  }

  get sampleAt(): number {
    return this.takenAt;
  }

  /**
   * The slots as a reading of the last `maxAgeMs` found them, else nothing. The HA cycle reads right
   * before it keeps the slots, so it need not ask PostgreSQL again when they are in order.
   */
  slotsReadWithin(maxAgeMs: number): SlotReading {
    if (!this.current || this.clock.monotonic() - this.takenAt > maxAgeMs) return {};
    return { physical: this.current.physicalSlots, logical: this.current.logicalSlots };
  }

  /** When PostgreSQL last answered anything (a reading, or an error it sent), on the monotonic clock. */
  get answeredAt(): number {
    return this.lastAnswerAt;
  }

  /** Whether PostgreSQL answered anything in the last `ms`. */
  answeredWithin(ms: number): boolean {
    return this.clock.monotonic() - this.lastAnswerAt <= ms;
  }

  /** When this replica was last seen running without streaming (0 while it streams). */
  get notStreamingSince(): number {
    return this.notStreamingFrom;
  }

  start(): void {
    this.stopped = false;
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    this.cancelTimer?.();
  }

  /** The current period: 1 s while readings change, up to 4 s while they do not. */
  get intervalMs(): number {
    return this.interval;
  }

  /** A server that just started is not hung, and gets its own chance to stream before it counts as stuck. */
  serverStarted(): void {
    this.notStreamingFrom = 0;
    this.lastAnswerAt = this.clock.monotonic();
    this.speedUp();
  }

  /** The server is not running: its last reading no longer describes it. */
  serverGone(): void {
    this.current = null;
    this.timingOutSince = 0;
    this.lastFingerprint = '';
    this.speedUp();
  }

  /** A new upstream gets a fresh chance to stream. */
  restartStreamingWatch(): void {
    this.notStreamingFrom = 0;
    this.speedUp();
  }

  /** Back to a reading a second, from now rather than at the end of a long idle wait. */
  private speedUp(): void {
    if (this.interval === BUSY_SAMPLE_INTERVAL_MS) return;
    this.interval = BUSY_SAMPLE_INTERVAL_MS;
    if (this.cancelTimer && !this.stopped) {
      this.cancelTimer();
      this.schedule();
    }
  }

  /**
   * A reading someone else took meanwhile (the HA cycle's, a transition's) counts as this tick's, and
   * the tick moves to a period after it: no reading is ever older than the period, and while the HA
   * cycle reads every loop_wait (2 s) an idle server (4 s period) gets no readings of the sampler's own.
   */
  private schedule(period = this.interval, delay = period): void {
    if (this.stopped) return;
    this.cancelTimer = this.clock.setTimer(() => {
      const sinceReading = this.clock.monotonic() - this.takenAt;
      if (sinceReading < period) return this.schedule(this.interval, Math.max(1, this.interval - sinceReading));
      this.schedule();
      void this.take();
    }, delay);
  }

  /**
   * Reads the server now. Readings never pile up behind a slow server (each may take up to the
   * statement timeout): a call while one runs waits for it and then for one more reading, shared by
   * every caller meanwhile, so that the reading it gets started after the call.
   */
  take(): Promise<void> {
    if (!this.reading) {
      this.reading = this.readOnce().finally(() => (this.reading = null));
      return this.reading;
    }
    this.nextReading ??= this.reading.then(() => {
      this.nextReading = null;
      return this.take();
    });
    return this.nextReading;
  }

  /**
   * take(), waited for at most `ms`: true once the reading ended (answered or failed), false while it still waits (the
   * reading goes on; the caller goes on with the last one).
   */
  takeWithin(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const cancel = this.clock.setTimer(() => resolve(false), ms);
      void this.take().then(() => {
        cancel();
        resolve(true);
      });
    });
  }

  private async readOnce(): Promise<void> {
    if (!this.serverRunning()) return;
    try {
      const sample = await this.query.sample();
      const fingerprint = JSON.stringify(sample);
      if (fingerprint !== this.lastFingerprint) this.speedUp();
      else
        this.interval = Math.max(
          BUSY_SAMPLE_INTERVAL_MS,
          Math.min(this.interval * 2, IDLE_SAMPLE_INTERVAL_MS, this.idleCeilingMs()),
        );
      this.lastFingerprint = fingerprint;
      if (this.timingOutSince !== 0) {
        this.logger.info(
          `the monitoring query answers again after ${Math.round((this.clock.monotonic() - this.timingOutSince) / 1000)} s of statement timeouts`,
        );
        this.timingOutSince = 0;
      }
      this.current = sample;
      this.takenAt = this.clock.monotonic();
      this.lastAnswerAt = this.takenAt;
      const streaming = !sample.inRecovery || sample.replicationState === 'streaming';
      if (streaming) this.notStreamingFrom = 0;
      else if (this.notStreamingFrom === 0) this.notStreamingFrom = this.takenAt;
      this.onSample(sample);
    } catch (error) {
      // An error PostgreSQL sent (a SQLSTATE) shows it answers; a timeout or a refused connection does not.
      if (
        typeof (error as { code?: unknown }).code === 'string' &&
        /^[0-9A-Z]{5}$/.test((error as { code: string }).code)
      ) {
        this.lastAnswerAt = this.clock.monotonic();
      }
      if ((error as { code?: unknown }).code === QUERY_CANCELED && this.current) {
        // As Patroni 4.1.4: a server too busy to finish the query in time is still the server it was;
        // the last reading (its role among it) stands, nothing is demoted for a slow answer.
        if (this.timingOutSince === 0) {
          this.timingOutSince = this.clock.monotonic();
          const role = this.current.inRecovery ? 'replica' : 'primary';
          this.logger.warning(
            `Failed to determine PostgreSQL state from the connection (statement timeout), falling back to cached role: ${role}`,
          );
        }
        return;
      }
      this.logger.debug(`status query failed: ${errorText(error)}`);
    }
  }
}
