import { join } from 'node:path';
import type { TermRelease } from '../../common/term-release';

/**
 * The fence's wire protocol and file layout, as the agent speaks and reads them.
 * Messages are newline-delimited JSON over the unix socket `<state_dir>/fence.sock`.
 * Defined once in `fence-protocol.json`: test/unit/fence-protocol-schema.spec.ts fails when these types differ
 * from it, as test/fence/test_protocol_schema.py does for the fence's side (`fence_protocol.py`, in Python).
 */

export type FenceStopMode = 'smart' | 'fast' | 'immediate';

/**
 * A leader's term as its fence holds it. When the agent (`agentPid`) is gone for `graceMs` with no agent
 * connected, the fence stops PostgreSQL, confirms it stopped, then revokes the lease itself; so does a
 * deadline that passes. Absent: the fence only stops PostgreSQL at its deadline.
 */
export interface FenceTerm {
  agentPid: number;
  graceMs: number;
  release: TermRelease;
}

/**
 * The hardware watchdog a leader's fence holds open and pets on each arm (`fence_watchdog.py`); an arm
 * without it, a disarm, or the postmaster's end closes it with the magic 'V'.
 */
export interface FenceWatchdog {
  driver: 'default' | 'testing';
  device: string;
  /** Seconds: ttl - safety_margin, as the reference sets it. */
  timeout: number;
  /** Mode `required`: a failure to activate is an error, and the agent gives the lock up. */
  required: boolean;
}

/** The watchdog as the fence holds it: sent in the hello and on every change. */
export interface FenceWatchdogState {
  running: boolean;
  /** Seconds the device was set to; null while not running. */
  timeout: number | null;
  device: string | null;
  /** Why the last activation failed; null once one succeeded. */
  error: string | null;
  /** Whether the agent asked for it in mode `required` (a failure is then an error, else routine). */
  required?: boolean;
  /** Why the fence changed it: a magic close, or left armed because the term ended on the fence's deadline. */
  reason?: string;
}

/** Agent → fence. */
export type FenceRequest =
  | { op: 'arm'; deadline: number; term?: FenceTerm; watchdog?: FenceWatchdog }
  | { op: 'disarm' }
  | { op: 'stop'; mode: FenceStopMode }
  | { op: 'signal'; signal: 'SIGHUP' };

/** Fence → agent. */
export type FenceEvent =
  | {
      event: 'hello';
      /** The postmaster's pid. */
      pid: number;
      /** Epoch ms at which the fence started the postmaster. */
      startedAt: number;
      /** The fence's own pid. */
      fencePid: number;
      /** The armed deadline (epoch ms), or null when disarmed. */
      deadline: number | null;
      /** Absent from fences that predate the watchdog. */
      watchdog?: FenceWatchdogState;
    }
  | ({ event: 'watchdog' } & FenceWatchdogState)
  | PostmasterExitEvent;

export interface PostmasterExitEvent {
  event: 'exit';
  pid: number;
  code: number | null;
  signal: string | null;
  /** Stopped because an agent asked (`op: stop`). */
  requested: boolean;
  /** Stopped by the dead man's switch. */
  fenced: boolean;
  /** Set when the postmaster could not be spawned at all. */
  error?: string;
}

/**
 * What the agent passes to the fence (as one JSON command-line argument, so nothing secret here).
 * The postmaster inherits the fence's environment, which the agent sets when it spawns the fence.
 */
export interface FenceLaunchOptions {
  dataDir: string;
  binDir: string;
  /** The `postgres` program to run (`bin_name.postgres`); `<binDir>/postgres` when absent. */
  postgres?: string;
  stateDir: string;
  /** `-c config_file=...` when set. */
  configFile?: string;
  /** Run the postmaster as this uid/gid (when the agent runs as root). */
  uid?: number;
  gid?: number;
  /** The dead man's switch armed from the start (epoch ms): the deadline the agent armed last, if any. */
  deadline?: number;
  /** Adopt this running postmaster (one whose fence was killed) instead of starting one. */
  adoptPid?: number;
}

/** Paths under the state directory. */
export function fencePaths(stateDir: string) {
  return {
    socket: join(stateDir, 'fence.sock'),
    pidFile: join(stateDir, 'fence.pid'),
    exitFile: join(stateDir, 'postmaster-exit.json'),
    postmasterLog: join(stateDir, 'postgresql.log'),
    fenceLog: join(stateDir, 'fence.log'),
    /** What the fence did on its own (a leader's term ended), one JSON line per step, until an agent records it. */
    journal: join(stateDir, 'fence-journal.jsonl'),
  };
}

/** One step the fence took on its own; the agent records it as `fence.<step>` in the node's log. */
export interface FenceJournalEntry {
  /** Epoch ms. */
  at: number;
  step:
    | 'agent_lost'
    | 'agent_back'
    | 'stopping_postgres'
    | 'postgres_stopped'
    | 'lease_revoked'
    | 'lease_revoke_failed'
    | 'postmaster_adopted';
  detail: string;
}

/** Signal the postmaster expects for each shutdown mode. */
export const STOP_SIGNALS: Record<FenceStopMode, NodeJS.Signals> = {
  smart: 'SIGTERM',
  fast: 'SIGINT',
  immediate: 'SIGQUIT',
};

/** Splits a byte stream into parsed JSON lines; malformed lines are passed to `onBadLine`. */
export function createLineParser(onMessage: (message: unknown) => void, onBadLine?: (line: string) => void) {
  let buffered = '';
  return (chunk: Buffer | string) => {
    buffered += chunk.toString();
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, newline).trim();
      buffered = buffered.slice(newline + 1);
      if (!line) continue;
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        onBadLine?.(line);
        continue;
      }
      onMessage(parsed);
    }
  };
}
