import { ActorRefFrom } from 'xstate';
import { EffectiveDynamicConfig, StatorConfig } from '../config/config.types';
import { ClusterView } from '../dcs/dcs.port';
import { DataDirInfo } from '../postgresql/postgres.port';
import { changedKeys, configDigest } from './config-digest';
import { changesMemory, HaMemory, HaMemoryEvent, haMemoryMachine, ScheduledRestart } from './ha-memory.machine';
import { effectiveTags } from './tags';

/**
 * A node's memory between HA cycles, read through typed accessors and changed only by the memory
 * machine's recorded events (ha-memory.machine.ts; the `memory` actor of the node's system), beside
 * the cycle's last DCS reading, which is an observation and is not recorded. NodeActors, the node's
 * wiring of actors, builds on it.
 */
export abstract class NodeMemory {
  /** What the HA cycle remembers between cycles: the `memory` actor of the node's system (node-system.ts). */
  abstract readonly memory: ActorRefFrom<typeof haMemoryMachine>;
  /** The cluster as the DCS last showed it: an input of each cycle's decision, not memory (not recorded). */
  private observedCluster: ClusterView | null = null;
  /** When the DCS last answered a read, on the monotonic clock (0: never). */
  private observedDcsAt = 0;

  constructor(readonly name: string) {}

  private get remembered(): HaMemory {
    return this.memory.getSnapshot().context;
  }

  /** The local configuration; replaced by POST /reload. */
  get config(): StatorConfig {
    return this.remembered.config!;
  }

  get tags(): Record<string, unknown> {
    return this.remembered.tags;
  }

  get dynamic(): EffectiveDynamicConfig {
    return this.remembered.dynamic!;
  }

  get dataDir(): DataDirInfo | null {
    return this.remembered.dataDir;
  }

  get leaving(): boolean {
    return this.remembered.leaving;
  }

  get bootstrapping(): boolean {
    return this.remembered.bootstrapping;
  }

  get leavingSync(): boolean {
    return this.remembered.leavingSync;
  }

  get checkpointAfterPromotePending(): boolean {
    return this.remembered.checkpointAfterPromotePending;
  }

  get readPoolWithdrawnAt(): number | null {
    return this.remembered.readPoolWithdrawnAt;
  }

  get watchdogFailure(): string | null {
    return this.remembered.watchdogFailure;
  }

  get knownFailsafeMembers(): Record<string, string> | null {
    return this.remembered.knownFailsafeMembers;
  }

  get settingsDigest(): string | null {
    return this.remembered.settingsDigest;
  }

  get scheduledRestart(): ScheduledRestart | null {
    return this.remembered.scheduledRestart;
  }

  get cluster(): ClusterView | null {
    return this.observedCluster;
  }

  get dcsLastSeen(): number {
    return this.observedDcsAt;
  }

  /** The DCS answered a read: the cluster as it showed it, and when. */
  observeCluster(cluster: ClusterView, at: number): void {
    this.observedCluster = cluster;
    this.observedDcsAt = at;
  }

  /** Changes what the HA cycle remembers; an event that would change nothing is neither sent nor recorded. */
  remember(event: HaMemoryEvent): void {
    if (changesMemory(this.remembered, event)) this.memory.send(event);
  }

  /** The effective dynamic configuration in force from now on: recorded (digest, changed keys) when it changed. */
  applyDynamic(dynamic: EffectiveDynamicConfig): void {
    // The same revision's configuration is the same object (effectiveConfigOfRevision): no digest every cycle.
    if (dynamic === this.remembered.dynamic) return;
    const digest = configDigest(dynamic);
    if (digest !== this.remembered.dynamicDigest)
      this.remember({
        type: 'DYNAMIC_CONFIG_APPLIED',
        dynamic,
        digest,
        changedKeys: changedKeys(this.remembered.dynamic ?? {}, dynamic),
      });
  }

  /** The local configuration in force from now on (at start, after a reload): recorded (digest, changed keys, tags) when it changed. */
  applyLocalConfig(config: StatorConfig): void {
    const digest = configDigest(config);
    if (digest !== this.remembered.configDigest)
      this.remember({
        type: 'CONFIG_RELOADED',
        config,
        digest,
        changedKeys: changedKeys(this.remembered.config ?? {}, config),
        tags: effectiveTags(config.tags),
      });
  }
}
