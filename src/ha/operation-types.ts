import { DynamicConfig } from '../dcs/dcs.port';

/**
 * The typed requests the node's operations take, and their answers. The API layer validates and
 * parses request bodies into these; nothing here knows about HTTP bodies.
 */

/** A refusal: the status code and the plain-text answer, in the reference's words. */
export class OperationRefused extends Error {
  constructor(
    readonly status: number,
    readonly text: string,
  ) {
    super(text);
  }
}

/** An instant as the operator wrote it (its offset is kept in the DCS) and as epoch ms. */
export interface ScheduledInstant {
  at: number;
  text: string;
}

export interface SwitchoverRequest {
  kind: 'switchover' | 'failover';
  leader?: string;
  candidate?: string;
  scheduledAt?: ScheduledInstant;
  /** A site: without a candidate, any member of it may take over; with one, the candidate must be of it. */
  site?: string;
}

export interface RestartRequest {
  restart_pending?: boolean;
  role?: 'primary' | 'standby_leader' | 'replica';
  postgres_version?: string;
  /** Seconds to wait for PostgreSQL to accept connections. */
  timeout?: number;
  schedule?: ScheduledInstant;
}

export interface ReinitializeRequest {
  force: boolean;
  fromLeader: boolean;
}

/** An operation's answer: the status code and the plain-text message the reference sends. */
export interface OperationAnswer {
  status: number;
  text: string;
  /** Headers beside it (POST /failsafe's `lsn`). */
  headers?: Record<string, string>;
}

/** A /config write whose keys passed the API's checks, with warnings to send back beside the timing adjustments. */
export interface ConfigWrite {
  document: DynamicConfig;
  warnings: string[];
}

/** A /config answer: JSON body or a refusal, and warnings about accepted settings that are not acted on. */
export interface ConfigAnswer {
  status: number;
  body: unknown;
  warnings?: string[];
}

/** The longest a restart may be given to come up: a day, well within what Node's timers hold. */
export const MAX_RESTART_TIMEOUT_SECONDS = 86_400;

/** How far ahead a switchover or restart may be scheduled. */
export const MAX_SCHEDULE_AHEAD_DAYS = 366;
