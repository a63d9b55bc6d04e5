import { BootstrapMethod } from '../config/config.types';
import { PostgresSettings, ReplicaMethod, StopEscalation, StopMode, UpstreamNode } from './postgres.port';

/* What the postgres machine (postgres.machine.ts) is sent, what it remembers, and what its invoked actors take. */

/** What the clone copies from: a member (pg_basebackup, or a method's `--connstring`) and a custom method. */
export interface CloneInput {
  source: UpstreamNode | null;
  method?: ReplicaMethod;
}

/** `settings: null` adopts a postmaster left running by an earlier agent instead of starting one. */
export interface StartRequest {
  settings: PostgresSettings | null;
  timeoutMs: number;
  /** When the HA loop asked for it (epoch ms): the backoff after a failed start counts from here. */
  at?: number;
}

/** A stop's mode and deadline, and who hears of its escalation steps. */
export interface StopRequest {
  mode: StopMode;
  timeoutMs: number;
  onEscalation?: (step: StopEscalation) => void;
}

export type PostgresEvent =
  | { type: 'INITDB' }
  | { type: 'CUSTOM_BOOTSTRAP'; method: BootstrapMethod; start: StartRequest }
  /** A clone by `method` (a custom replica method) or by pg_basebackup from `source`. */
  | { type: 'CLONE'; source: UpstreamNode | null; method?: ReplicaMethod; at?: number }
  | { type: 'START'; start: StartRequest }
  | { type: 'ADOPT'; timeoutMs: number }
  | { type: 'STOP'; mode: StopMode; timeoutMs: number }
  /** The stop under way passed its deadline and took `step`. */
  | { type: 'STOP_ESCALATED'; step: StopEscalation }
  | { type: 'RESTART'; start: StartRequest; mode: StopMode }
  | { type: 'PROMOTE'; timeoutMs: number }
  | { type: 'RECONFIGURE'; settings: PostgresSettings }
  | { type: 'REWIND'; source: UpstreamNode; crashRecovery: boolean }
  | { type: 'REMOVE_DATA' }
  /** `pid`: which postmaster exited (absent in events recorded before it was carried). */
  | {
      type: 'POSTMASTER_EXITED';
      pid?: number;
      code: number | null;
      signal: string | null;
      fenced: boolean;
      lastLog?: string;
    }
  | { type: 'SET_PAUSE'; paused: boolean };

export interface PostgresContext {
  paused: boolean;
  /** Message of the last failed action, cleared when the next action starts. */
  lastError: string | null;
  /** Exit code of the command behind the last failed action, when a command failed. */
  lastExitCode: number | null;
  /** Outcome of the last finished action, e.g. `rewound`, `not_needed`, `promoted`. */
  lastOutcome: string | null;
  pid: number | null;
  /** The pid of the last postmaster this machine ran, kept after it stopped: its exit reported late is not news. */
  lastPid: number | null;
  /** The start that follows a custom bootstrap. */
  bootstrapStart: StartRequest | null;
  /** Starts and restarts that failed in a row; back to 0 once PostgreSQL runs. */
  failedStarts: number;
  /** When the latest start or restart was asked for (epoch ms), null before the first. */
  lastStartAt: number | null;
  /** Clones that failed in a row; back to 0 once one succeeds. */
  failedClones: number;
  /** When the latest clone was asked for (epoch ms), null before the first. */
  lastCloneAt: number | null;
  /** The furthest step the latest stop had to take past its deadline, null when it ended in its own mode. */
  lastStopEscalation: StopEscalation | null;
}
