import { every, TimerClock } from '../common/clock';
import { errorText } from '../common/error-text';
import { Logger } from '../common/logger';
import { PostgresQuery, PostgresSample } from '../postgresql/postgres.port';

const SAMPLE_INTERVAL_MS = 1_000;

/**
 * The `sampler` actor of the design: reads PostgreSQL's status every second and after each
 * transition, so the API answers from memory, and keeps what the HA cycle needs to judge the
 * server: when it last answered at all (a hung server stops moving it) and since when a replica
 * has not been streaming.
 */
export class Sampler {
  private current: PostgresSample | null = null;
  private takenAt = 0;
  private lastAnswerAt = 0;
  private notStreamingFrom = 0;
  private cancelTimer: (() => void) | null = null;

  constructor(
    private readonly query: PostgresQuery,
    private readonly clock: TimerClock,
    private readonly logger: Logger,
    /** Whether there is a running server to read. */
    private readonly serverRunning: () => boolean,
    /** Called after each successful reading. */
    private readonly onSample: (sample: PostgresSample) => void,
  ) {}

  get sample(): PostgresSample | null {
    return this.current;
  }

  get sampleAt(): number {
    return this.takenAt;
  }

  /** Epoch ms when PostgreSQL last answered anything: a reading, or an error it sent. */
  get answeredAt(): number {
    return this.lastAnswerAt;
  }

  /** When this replica was last seen running without streaming (0 while it streams). */
  get notStreamingSince(): number {
    return this.notStreamingFrom;
  }

  start(): void {
    this.cancelTimer = every(this.clock, SAMPLE_INTERVAL_MS, () => void this.take());
  }

  stop(): void {
    this.cancelTimer?.();
  }

  /** A server that just started is not hung, and gets its own chance to stream before it counts as stuck. */
  serverStarted(): void {
    this.notStreamingFrom = 0;
    this.lastAnswerAt = this.clock.now();
  }

  /** The server is not running: its last reading no longer describes it. */
  serverGone(): void {
    this.current = null;
  }

  /** A new upstream gets a fresh chance to stream. */
  restartStreamingWatch(): void {
    this.notStreamingFrom = 0;
  }

  async take(): Promise<void> {
    if (!this.serverRunning()) return;
    try {
      const sample = await this.query.sample();
      this.current = sample;
      this.takenAt = this.clock.now();
      this.lastAnswerAt = this.takenAt;
      const streaming = !sample.inRecovery || sample.replicationState === 'streaming';
      if (streaming) this.notStreamingFrom = 0;
      else if (this.notStreamingFrom === 0) this.notStreamingFrom = this.takenAt;
      this.onSample(sample);
    } catch (error) {
      // An error PostgreSQL sent (a SQLSTATE) shows it answers; a timeout or a refused connection does not.
      if (typeof (error as { code?: unknown }).code === 'string' && /^[0-9A-Z]{5}$/.test((error as { code: string }).code)) {
        this.lastAnswerAt = this.clock.now();
      }
      this.logger.debug(`status query failed: ${errorText(error)}`);
    }
  }
}
