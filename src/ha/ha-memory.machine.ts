import { assign, setup } from 'xstate';
import { EffectiveDynamicConfig, StatorConfig } from '../config/config.types';
import { DataDirInfo } from '../postgresql/postgres.port';

/**
 * The `memory` machine: what the HA cycle remembers from one cycle to the next. It changes only by
 * its named events, each recorded like any machine transition (`memory.transition`), so a replay of
 * a node's log rebuilds it at any instant. What each cycle reads afresh (the DCS's cluster view,
 * when the DCS last answered) is an input to the cycle's decision, not memory: it is not here.
 *
 * Every event is sent only when the value it carries changed. The local and dynamic configurations
 * are big: their events carry them for the live node, but the log keeps only a digest and the
 * names of the keys that changed (`recordedMemoryEvent`); a replay keeps the digests.
 */
export interface HaMemory {
  /** This node is bootstrapping the cluster (initdb, post_bootstrap): nothing to lose yet. */
  bootstrapping: boolean;
  /** The agent is stopping: its last member key outlives it by a ttl. */
  leaving: boolean;
  /** A synchronous standby about to stop publishes `nosync` until the leader has let it go. */
  leavingSync: boolean;
  /** Between a promotion and its first checkpoint pg_control still names the old timeline. */
  checkpointAfterPromotePending: boolean;
  /** Monotonic ms since when this running replica answers 503 on the replica checks because it is about to be primary. */
  readPoolWithdrawnAt: number | null;
  /** Mode `required`: why this node cannot have its watchdog (it may not lead), as of the last HA cycle. */
  watchdogFailure: string | null;
  /** `/failsafe` as last read or written by this node: what it holds to if the DCS fails right after a write. */
  knownFailsafeMembers: Record<string, string> | null;
  /** The data directory as last inspected (pg_controldata, standby.signal). */
  dataDir: DataDirInfo | null;
  /** The local configuration in force (null in a replay: the log keeps its digest). */
  config: StatorConfig | null;
  configDigest: string | null;
  /** The effective tags of the local configuration. */
  tags: Record<string, unknown>;
  /** The effective dynamic configuration in force (null in a replay: the log keeps its digest). */
  dynamic: EffectiveDynamicConfig | null;
  dynamicDigest: string | null;
  /** The digest of the parameters and files PostgreSQL was last given: a change of their inputs makes a reload. */
  settingsDigest: string | null;
  /** The restart scheduled on this node (POST /restart with `schedule`), kept by the `restartScheduler` actor. */
  scheduledRestart: ScheduledRestart | null;
}

/** A restart waiting for its time, with the filters it must still satisfy then. */
export interface ScheduledRestart {
  /** Epoch ms and the timestamp as the client wrote it. */
  at: number;
  schedule: string;
  role?: string;
  postgres_version?: string;
  restart_pending?: boolean;
  timeout?: number;
  /** The postmaster it was scheduled for: a restart in between cancels it. */
  postmasterStartTime: string | null;
}

export type HaMemoryEvent =
  | { type: 'BOOTSTRAP_STARTED' }
  | { type: 'BOOTSTRAP_ENDED' }
  | { type: 'LEAVING_STARTED' }
  | { type: 'LEAVING_SYNC_STARTED' }
  | { type: 'LEAVING_SYNC_ENDED' }
  | { type: 'CHECKPOINT_AFTER_PROMOTE_PENDING' }
  | { type: 'CHECKPOINT_AFTER_PROMOTE_DONE' }
  | { type: 'READ_POOL_WITHDRAWN'; at: number }
  | { type: 'READ_POOL_RESTORED' }
  | { type: 'WATCHDOG_FAILURE_CHANGED'; failure: string | null }
  | { type: 'FAILSAFE_MEMBERS_KNOWN'; members: Record<string, string> | null }
  | { type: 'DATA_DIR_INSPECTED'; dataDir: DataDirInfo | null }
  /** The local configuration, read at start or again by a reload; `config` is absent from the log. */
  | {
      type: 'CONFIG_RELOADED';
      config?: StatorConfig;
      digest: string;
      changedKeys: string[];
      tags: Record<string, unknown>;
    }
  /** The effective dynamic configuration applied; `dynamic` is absent from the log. */
  | { type: 'DYNAMIC_CONFIG_APPLIED'; dynamic?: EffectiveDynamicConfig; digest: string; changedKeys: string[] }
  /** PostgreSQL was given settings (a start, a reconfiguration) whose parameters and files have this digest. */
  | { type: 'SETTINGS_CONFIGURED'; digest: string }
  /** A restart was scheduled (or taken back from the log after an agent restart). */
  | { type: 'RESTART_SCHEDULED'; restart: ScheduledRestart }
  /** The scheduled restart is gone: run, skipped, cancelled or stale (the cluster event says which). */
  | { type: 'RESTART_UNSCHEDULED'; outcome: 'executed' | 'skipped' | 'cancelled' | 'expired' };

export const HA_MEMORY_EVENT_TYPES: ReadonlySet<string> = new Set([
  'BOOTSTRAP_STARTED',
  'BOOTSTRAP_ENDED',
  'LEAVING_STARTED',
  'LEAVING_SYNC_STARTED',
  'LEAVING_SYNC_ENDED',
  'CHECKPOINT_AFTER_PROMOTE_PENDING',
  'CHECKPOINT_AFTER_PROMOTE_DONE',
  'READ_POOL_WITHDRAWN',
  'READ_POOL_RESTORED',
  'WATCHDOG_FAILURE_CHANGED',
  'FAILSAFE_MEMBERS_KNOWN',
  'DATA_DIR_INSPECTED',
  'CONFIG_RELOADED',
  'DYNAMIC_CONFIG_APPLIED',
  'SETTINGS_CONFIGURED',
  'RESTART_SCHEDULED',
  'RESTART_UNSCHEDULED',
]);

export const INITIAL_HA_MEMORY: HaMemory = {
  bootstrapping: false,
  leaving: false,
  leavingSync: false,
  checkpointAfterPromotePending: false,
  readPoolWithdrawnAt: null,
  watchdogFailure: null,
  knownFailsafeMembers: null,
  dataDir: null,
  config: null,
  configDigest: null,
  tags: {},
  dynamic: null,
  dynamicDigest: null,
  settingsDigest: null,
  scheduledRestart: null,
};

export const haMemoryMachine = setup({
  types: { events: {} as HaMemoryEvent, context: {} as HaMemory },
}).createMachine({
  id: 'memory',
  initial: 'remembering',
  context: INITIAL_HA_MEMORY,
  states: {
    remembering: {
      on: {
        BOOTSTRAP_STARTED: { actions: assign({ bootstrapping: true }) },
        BOOTSTRAP_ENDED: { actions: assign({ bootstrapping: false }) },
        LEAVING_STARTED: { actions: assign({ leaving: true }) },
        LEAVING_SYNC_STARTED: { actions: assign({ leavingSync: true }) },
        LEAVING_SYNC_ENDED: { actions: assign({ leavingSync: false }) },
        CHECKPOINT_AFTER_PROMOTE_PENDING: { actions: assign({ checkpointAfterPromotePending: true }) },
        CHECKPOINT_AFTER_PROMOTE_DONE: { actions: assign({ checkpointAfterPromotePending: false }) },
        READ_POOL_WITHDRAWN: { actions: assign({ readPoolWithdrawnAt: ({ event }) => event.at }) },
        READ_POOL_RESTORED: { actions: assign({ readPoolWithdrawnAt: null }) },
        WATCHDOG_FAILURE_CHANGED: { actions: assign({ watchdogFailure: ({ event }) => event.failure }) },
        FAILSAFE_MEMBERS_KNOWN: { actions: assign({ knownFailsafeMembers: ({ event }) => event.members }) },
        DATA_DIR_INSPECTED: { actions: assign({ dataDir: ({ event }) => event.dataDir }) },
        CONFIG_RELOADED: {
          actions: assign({
            config: ({ event }) => event.config ?? null,
            configDigest: ({ event }) => event.digest,
            tags: ({ event }) => event.tags,
          }),
        },
        DYNAMIC_CONFIG_APPLIED: {
          actions: assign({
            dynamic: ({ event }) => event.dynamic ?? null,
            dynamicDigest: ({ event }) => event.digest,
          }),
        },
        SETTINGS_CONFIGURED: { actions: assign({ settingsDigest: ({ event }) => event.digest }) },
        RESTART_SCHEDULED: { actions: assign({ scheduledRestart: ({ event }) => event.restart }) },
        RESTART_UNSCHEDULED: { actions: assign({ scheduledRestart: null }) },
      },
    },
  },
});

/** The memory event as the log keeps it: the configurations themselves stay out (a digest and the changed keys go in). */
export function recordedMemoryEvent(event: { type: string; [key: string]: unknown }): {
  type: string;
  [key: string]: unknown;
} {
  if (event.type !== 'CONFIG_RELOADED' && event.type !== 'DYNAMIC_CONFIG_APPLIED') return event;
  const { config, dynamic, ...bounded } = event;
  return bounded;
}

export type ReplayableHaMemory = Omit<HaMemory, 'config' | 'dynamic'>;

/** The memory a replay can rebuild: everything but the configuration bodies (their digests stand for them). */
export function replayableMemory(memory: HaMemory): ReplayableHaMemory {
  const { config, dynamic, ...rest } = memory;
  return rest;
}

/** Whether `event` would change `memory`: the node sends (and so records) only the events that do. */
export function changesMemory(memory: HaMemory, event: HaMemoryEvent): boolean {
  switch (event.type) {
    case 'BOOTSTRAP_STARTED':
      return !memory.bootstrapping;
    case 'BOOTSTRAP_ENDED':
      return memory.bootstrapping;
    case 'LEAVING_STARTED':
      return !memory.leaving;
    case 'LEAVING_SYNC_STARTED':
      return !memory.leavingSync;
    case 'LEAVING_SYNC_ENDED':
      return memory.leavingSync;
    case 'CHECKPOINT_AFTER_PROMOTE_PENDING':
      return !memory.checkpointAfterPromotePending;
    case 'CHECKPOINT_AFTER_PROMOTE_DONE':
      return memory.checkpointAfterPromotePending;
    case 'READ_POOL_WITHDRAWN':
      return memory.readPoolWithdrawnAt === null;
    case 'READ_POOL_RESTORED':
      return memory.readPoolWithdrawnAt !== null;
    case 'WATCHDOG_FAILURE_CHANGED':
      return memory.watchdogFailure !== event.failure;
    case 'FAILSAFE_MEMBERS_KNOWN':
      return JSON.stringify(memory.knownFailsafeMembers) !== JSON.stringify(event.members);
    case 'DATA_DIR_INSPECTED':
      return JSON.stringify(memory.dataDir) !== JSON.stringify(event.dataDir);
    case 'CONFIG_RELOADED':
      return memory.configDigest !== event.digest;
    case 'DYNAMIC_CONFIG_APPLIED':
      return memory.dynamicDigest !== event.digest;
    case 'SETTINGS_CONFIGURED':
      return memory.settingsDigest !== event.digest;
    case 'RESTART_SCHEDULED':
      return JSON.stringify(memory.scheduledRestart) !== JSON.stringify(event.restart);
    case 'RESTART_UNSCHEDULED':
      return memory.scheduledRestart !== null;
  }
}
