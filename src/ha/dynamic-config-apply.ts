import { Logger } from '../common/logger';
import { effectiveConfigOfRevision } from '../config/dynamic-config';
import { Dcs, DynamicConfig, Versioned } from '../dcs/dcs.port';
import type { NodeActors } from './node-actors';
import { currentSettings, parametersChanged } from './postgres-settings';

/** Puts the dynamic configuration read from the DCS in force each cycle: its adjustments are logged once per change. */
export class DynamicConfigApplier {
  private configAdjustments = '';
  private readonly effectiveConfig = effectiveConfigOfRevision();

  constructor(
    private readonly dcs: Dcs,
    private readonly logger: Logger,
  ) {}

  async apply(node: NodeActors, fromDcs: Versioned<DynamicConfig> | null): Promise<void> {
    const { config: next, adjustments } = this.effectiveConfig(fromDcs, configWithoutDcs(node));
    const explained = adjustments.join('; ');
    if (explained !== this.configAdjustments) {
      this.configAdjustments = explained;
      for (const adjustment of adjustments) this.logger.warning(adjustment);
    }
    const ttlChanged = next.ttl !== node.dynamic.ttl;
    this.dcs.setRetryTimeout(next.retry_timeout * 1000);
    if (next.pause !== node.dynamic.pause) node.postgres.send({ type: 'SET_PAUSE', paused: next.pause });
    node.applyDynamic(next);
    if (ttlChanged) await this.dcs.setTtl(next.ttl).catch(() => undefined);
  }
}

/** A changed parameter set reaches a running server by a reload; pending_restart tells the rest. */
export function applyChangedParameters(node: NodeActors, logger: Logger): void {
  // Without a reading the server's role is unknown, and so is what its settings should say (an adopted primary keeps its synchronous_standby_names).
  if (
    node.pgState() !== 'running' ||
    node.activity() !== null ||
    node.sampler.sample === null ||
    !parametersChanged(node)
  )
    return;
  // A replica whose upstream this agent does not know yet (a running server it adopted) would lose its
  // primary_conninfo: the change waits until a cycle points it at its leader, which applies it too.
  if (node.sampler.sample.inRecovery && node.upstream === null) return;
  logger.info('PostgreSQL parameters, pg_hba, pg_ident or recovery_conf changed: reloading the configuration');
  node.postgres.send({ type: 'RECONFIGURE', settings: currentSettings(node) });
}

/** What this node runs with, and a lock holder publishes, when the DCS holds no `/config`: Patroni's cached copy, else `bootstrap.dcs`. */
export function configWithoutDcs(node: NodeActors): DynamicConfig {
  return node.configCache.withoutDcs(node.config.bootstrap.dcs) as DynamicConfig;
}
