import { Injectable } from '@nestjs/common';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { NodeDiagnostics } from '../../ha/node-diagnostics';
import { NodeView } from '../../ha/node-view';

/** What every indicator reads: the node's view, the fence and event queue, and the time. All from memory. */
export interface DiagnosisInput {
  view: NodeView;
  diagnostics: NodeDiagnostics;
  now: number;
}

/** The indicators in the order they are reported; `statorctl diagnose` reads `details.<key>`. */
export const INDICATOR_KEYS = ['etcd', 'postgres', 'fence', 'events', 'ha_cycle'] as const;
export type IndicatorKey = (typeof INDICATOR_KEYS)[number];

// Whole milliseconds: the instants come from the monotonic clock, in fractions of one.
const ageMs = (at: number, now: number): number | null => (at > 0 ? Math.max(0, Math.round(now - at)) : null);
const iso = (at: number | null): string | null => (at === null ? null : new Date(at).toISOString());

/**
 * The node's self-diagnosis as terminus indicators, one per concern (issue 14 item 5). Each reads
 * state the agent already holds and answers at once: none waits on etcd, PostgreSQL or the fence.
 * Durations are integers in milliseconds, times ISO 8601 (UTC); a down indicator says why in `message`.
 */
@Injectable()
export class DiagnosticsIndicators {
  constructor(private readonly indicators: HealthIndicatorService) {}

  /** All five, for HealthCheckService.check. */
  all(input: () => DiagnosisInput): (() => HealthIndicatorResult)[] {
    return [
      () => this.etcd(input()),
      () => this.postgres(input()),
      () => this.fence(input()),
      () => this.events(input()),
      () => this.haCycle(input()),
    ];
  }

  /**
   * etcd reachable: the last successful read of the cluster is at most `ttl` old (the age past which
   * the API refuses to serve the view), and a leader's lease has time left.
   */
  etcd({ view, now }: DiagnosisInput): HealthIndicatorResult<'etcd'> {
    const check = this.indicators.check('etcd');
    const lastReadAge = ageMs(view.dcsLastSeen, now);
    const leader = view.leadership === 'leader';
    const data = {
      last_read: iso(view.dcsLastSeen > 0 ? view.dcsLastSeen : null),
      last_read_age_ms: lastReadAge,
      max_read_age_ms: view.config.ttl * 1000,
      leader,
      lease_left_ms: leader ? Math.round(view.lockValidUntil - now) : null,
    };
    if (lastReadAge === null) return check.down({ ...data, message: 'etcd has not been read yet' });
    if (lastReadAge > data.max_read_age_ms)
      return check.down({ ...data, message: `etcd last read ${lastReadAge} ms ago, more than ttl` });
    if (leader && data.lease_left_ms !== null && data.lease_left_ms <= 0)
      return check.down({ ...data, message: 'the leader lease has run out' });
    return check.up(data);
  }

  /**
   * PostgreSQL sampled recently: running, and its last reading at most `postgres_unresponsive_timeout`
   * old (ttl when that is 0), the bound past which the HA cycle calls the server hung.
   */
  postgres({ view, now }: DiagnosisInput): HealthIndicatorResult<'postgres'> {
    const check = this.indicators.check('postgres');
    const sampleAge = ageMs(view.sampleAt, now);
    const bound =
      (view.config.postgres_unresponsive_timeout > 0 ? view.config.postgres_unresponsive_timeout : view.config.ttl) *
      1000;
    const data = {
      state: view.pgState,
      role: view.sample ? (view.sample.inRecovery ? 'replica' : 'primary') : null,
      last_sample: iso(view.sampleAt > 0 ? view.sampleAt : null),
      sample_age_ms: sampleAge,
      max_sample_age_ms: bound,
    };
    if (view.pgState !== 'running')
      return check.down({ ...data, message: `PostgreSQL is not running (${view.pgState})` });
    if (sampleAge === null) return check.down({ ...data, message: 'PostgreSQL has not been sampled yet' });
    if (sampleAge > bound)
      return check.down({
        ...data,
        message: `the last PostgreSQL sample is ${sampleAge} ms old, more than ${bound} ms`,
      });
    return check.up(data);
  }

  /**
   * The fence (safety rule 4): a running primary must be under a connected fence with a deadline
   * still ahead; elsewhere a disarmed fence is expected, an armed one is reported with its time left.
   */
  fence({ view, diagnostics, now }: DiagnosisInput): HealthIndicatorResult<'fence'> {
    const check = this.indicators.check('fence');
    const { connected, deadline } = diagnostics.fence;
    const primary = view.pgState === 'running' && view.sample !== null && !view.sample.inRecovery;
    const data = {
      connected,
      armed: deadline !== null,
      deadline: iso(deadline),
      left_ms: deadline === null ? null : Math.round(deadline - now),
      required: primary,
    };
    if (data.left_ms !== null && data.left_ms <= 0 && view.pgState === 'running') {
      return check.down({ ...data, message: 'the fence deadline has passed while PostgreSQL still runs' });
    }
    if (primary && !connected) return check.down({ ...data, message: 'the primary runs without a fence' });
    if (primary && !data.armed) return check.down({ ...data, message: 'the primary runs with its fence disarmed' });
    return check.up(data);
  }

  /** The event recorder's queue drains: its oldest queued event is at most `ttl` old. */
  events({ view, diagnostics, now }: DiagnosisInput): HealthIndicatorResult<'events'> {
    const check = this.indicators.check('events');
    const queue = diagnostics.eventQueue;
    const oldestAge = queue.oldestAt === null ? null : Math.max(0, Math.round(now - queue.oldestAt));
    const data = {
      queue_depth: queue.depth,
      oldest_queued_age_ms: oldestAge,
      max_queued_age_ms: view.config.ttl * 1000,
      store_down_since: iso(queue.storeDownSince),
    };
    if (oldestAge !== null && oldestAge > data.max_queued_age_ms) {
      return check.down({
        ...data,
        message: `${queue.depth} events wait to be stored, the oldest for ${oldestAge} ms`,
      });
    }
    return check.up(data);
  }

  /**
   * The HA cycle runs: its last start is at most twice `loop_wait` plus `retry_timeout` old (one cycle
   * may wait on etcd that long before the next wait).
   */
  haCycle({ view, now }: DiagnosisInput): HealthIndicatorResult<'ha_cycle'> {
    const check = this.indicators.check('ha_cycle');
    const age = ageMs(view.lastCycleAt, now);
    const data = {
      last_cycle: iso(view.lastCycleAt > 0 ? view.lastCycleAt : null),
      last_cycle_age_ms: age,
      loop_wait_ms: view.config.loop_wait * 1000,
      max_cycle_age_ms: (2 * view.config.loop_wait + view.config.retry_timeout) * 1000,
      verdict: view.verdict,
    };
    if (age === null) return check.down({ ...data, message: 'the HA cycle has not run yet' });
    if (age > data.max_cycle_age_ms)
      return check.down({
        ...data,
        message: `the last HA cycle started ${age} ms ago, more than ${data.max_cycle_age_ms} ms`,
      });
    return check.up(data);
  }
}
