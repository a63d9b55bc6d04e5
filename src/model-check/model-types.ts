/**
 * The checker's shared vocabulary: steps, bounds, invariant names and the decision's variants. A leaf
 * module (it imports only types the HA code and model.ts define), so that the checker's files can share
 * them without importing one another in a circle.
 */
import { HaSnapshot } from '../ha/cluster-snapshot';
import { Decision } from '../ha/decision';
import { DecisionCode } from './decision-code';
import { ModelSettings, ReplicationMode } from './model';

/** The invariants of issue 19, each with the number the issue gives it, and issue 34's race (2b). */
export type InvariantId =
  | 'lease'
  | 'promotion'
  | 'race'
  | 'sync'
  | 'progress'
  | 'replay'
  | 'site'
  | 'availability'
  | 'sync-settled'
  | 'quorum-gap'
  | 'priority'
  | 'watchdog'
  | 'request'
  | 'pause'
  | 'quorum-resolver'
  | 'quorum-reference'
  | 'timeline'
  | 'unresponsive';

export interface Violation {
  invariant: InvariantId;
  message: string;
}

/** Every step the checker may take: a node's HA cycle, time, PostgreSQL completing, faults, clients and operators. */
export const ACTION_KINDS = [
  'cycle',
  'read',
  'tick',
  'complete',
  'ship',
  'write',
  'agentCrash',
  'agentFreeze',
  'agentRestart',
  'pgCrash',
  'pgHang',
  'fenceKill',
  'fenceLate',
  'dcsCut',
  'dcsHeal',
  'peerCut',
  'peerHeal',
  'watchdogFail',
  'quorumLoss',
  'quorumBack',
  'switchover',
  'switchoverAny',
  'scheduledSwitchover',
  'failover',
  'pause',
  'resume',
  'syncMode',
  'ttl',
  'noFailover',
  'failoverPriority',
] as const;
export type ActionKind = (typeof ACTION_KINDS)[number];

export interface Action {
  kind: ActionKind;
  node: number;
  label: string;
}

export interface Bounds {
  faults: number;
  operations: number;
  writes: number;
  /** DCS reads decided on only at the node's next cycle (stale views). */
  staleReads: number;
  /** The action kinds this search may take (all when absent). */
  kinds?: ReadonlySet<ActionKind>;
  /** The replication modes `syncMode` cycles through, in order. */
  modes: ReplicationMode[];
  /** Every node runs without its fence: the invariants must then hold from decide() alone while the agent runs. */
  fenceless?: boolean;
  /** `failsafe_mode: true` in `/config` (failsafe.ts); nodes may then be cut off from their peers (`peerCut`). */
  failsafe?: boolean;
  /** Watchdog mode `required` on every node: a node's watchdog may fail to activate (`watchdogFail`, watchdog-rule.ts). */
  watchdog?: boolean;
  /** `synchronous_site_count` of the search, members placed in sites (site-rule.ts); absent: none. */
  siteRule?: number;
  /** Settings fixed for the search: check_timeline, primary_start_timeout, a member tagged nosync (model.ts). */
  settings?: ModelSettings;
}

/**
 * A deliberately broken variant of the decision code, for the checker's own tests: it patches what
 * decide() sees or what it answers. Only the checker takes one; the agent's HA loop has no such input.
 */
export interface DecisionMutation {
  name: string;
  snapshot?(s: HaSnapshot): HaSnapshot;
  decision?(s: HaSnapshot, d: Decision): Decision;
  /** The fence is never armed. */
  noFence?: boolean;
  /** Drops a recorded state change (for the recorder's invariant). */
  dropsEvent?(type: string, to: string | null): boolean;
  /** The decision code with one edit, from the mutation run (the real one when absent). */
  code?: DecisionCode;
}

/** A promotion decided in a cycle: what invariant 2 and 3 judge. */
export interface Promotion {
  node: number;
  /** A switchover or manual failover was pending: lag is accepted, as the reference does. */
  manual: boolean;
  /** A manual failover (no leader named): the operator's override, which the sync rules do not bind. */
  forced: boolean;
  paused: boolean;
  /** Won the leader race in this cycle (took the key), rather than promoting under a key it already held. */
  raced: boolean;
}
