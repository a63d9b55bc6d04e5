import { Clock } from '../common/clock';
import { EventSink } from '../events/transition-recorder';
import type { FenceJournalEntry } from '../postgresql/postgres.port';

/**
 * What a node records besides its machines' transitions: one verdict per change of the HA
 * cycle's sentence, and cluster facts (leader acquired, switchover executed, timeline created...).
 */
export class NodeEvents {
  private lastVerdict = '';

  constructor(
    private readonly node: string,
    private readonly sink: EventSink,
    private readonly clock: Clock,
    /** The server's timeline now, stamped on every cluster fact. */
    private readonly timeline: () => number | null,
  ) {}

  get verdict(): string {
    return this.lastVerdict;
  }

  /** Records the cycle's verdict when it differs from the last one. */
  recordVerdict(verdict: string): void {
    if (verdict === this.lastVerdict) return;
    this.lastVerdict = verdict;
    this.recordFact(`node/${this.node}/ha`, 'ha.verdict', 'ha.cycle', { verdict });
  }

  /** A step the fence took on its own while no agent could (its journal, read by the next agent), at the time it was taken. */
  recordFenceStep(entry: FenceJournalEntry): void {
    this.recordFact(
      `node/${this.node}/fence`,
      `fence.${entry.step}`,
      'fence',
      { detail: entry.detail, recordedAt: isoWithOffset(this.clock.now()) },
      entry.at,
    );
  }

  /**
   * A moment a load balancer must see before the role changes (read-pool.ts, load-balancer-drain.ts):
   * health checks withdrawn, a drain begun or ended. On the node's own stream, at the time it happened.
   */
  recordLoadBalancer(type: `load_balancer.${string}`, cause: string, data: Record<string, unknown> = {}): void {
    this.recordFact(`node/${this.node}/load-balancer`, type, cause, data);
  }

  /** The watchdog as the fence holds it (activated, closed, failed) and whether this node may lead with it. */
  recordWatchdog(type: `watchdog.${string}`, cause: string, data: Record<string, unknown> = {}): void {
    this.recordFact(`node/${this.node}/watchdog`, type, cause, data);
  }

  /** Appends a cluster fact (switchover requested, config changed...) to the event log; `at` when it happened, if not now. */
  recordCluster(type: string, cause: string, data: Record<string, unknown> = {}, at?: number): void {
    this.recordFact('cluster', type, cause, { ...data, timeline: data.timeline ?? this.timeline() }, at);
  }

  /** A fact, not a machine transition: no from and to. Its time in UTC, as every transition's (one format in every event table). */
  private recordFact(
    stream: string,
    type: string,
    cause: string,
    data: Record<string, unknown>,
    at = this.clock.now(),
  ): void {
    this.sink.record({
      stream,
      type,
      at: new Date(at).toISOString(),
      node: this.node,
      from: null,
      to: null,
      cause,
      data,
    });
  }
}

/** ISO 8601 with the local offset, as the reference writes history timestamps. */
export function isoWithOffset(epochMs: number): string {
  const date = new Date(epochMs);
  const offsetMinutes = -date.getTimezoneOffset();
  const local = new Date(epochMs + offsetMinutes * 60_000).toISOString().replace('Z', '');
  const sign = offsetMinutes >= 0 ? '+' : '-';
  const abs = Math.abs(offsetMinutes);
  return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}
