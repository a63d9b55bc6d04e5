import { errorText } from '../common/error-text';
import { Logger } from '../common/logger';
import { PostgresProcess } from '../postgresql/postgres.port';

type Mapping = Record<string, unknown>;

/**
 * `patroni.dynamic.json` in the data directory, as Patroni keeps it: the dynamic configuration in force (the
 * DCS `/config`, else the copy read from the file at start, else `bootstrap.dcs`). It is what a lock holder
 * writes when the DCS holds no `/config` (a wiped DCS), so the cluster keeps its `edit-config` changes.
 * Written only into a data directory that holds a cluster and that no procedure (clone, reinit, bootstrap)
 * is replacing; a failed write is logged once and tried again on the next cycle.
 */
export class DynamicConfigCache {
  /** The last configuration in force; its identity changes only with its content (effectiveConfigOfRevision). */
  private inForce: Mapping | null = null;
  private inForceText: string | null = null;
  /** What the file holds as far as this agent knows; null when it must be written again. */
  private written: string | null = null;
  private lastFailure: string | null = null;

  constructor(
    private readonly pg: PostgresProcess,
    private readonly logger: Logger,
  ) {}

  /** Reads the file left by an earlier run (of Stator or Patroni); an unreadable one is logged and ignored. */
  async load(): Promise<void> {
    try {
      const cached = await this.pg.readDynamicConfigCache();
      if (cached) this.remember(cached);
    } catch (error) {
      this.logger.warning(`ignoring patroni.dynamic.json: ${errorText(error)}`);
    }
  }

  /** The configuration to run with, and to publish, when the DCS holds none. */
  withoutDcs(bootstrapDcs: Mapping): Mapping {
    return this.inForce ?? bootstrapDcs;
  }

  async keep(fromDcs: Mapping | null, bootstrapDcs: Mapping, dataDirReady: boolean): Promise<void> {
    if (fromDcs) this.remember(fromDcs);
    if (!dataDirReady) {
      // A clone or reinit replaces the directory, and the file with it.
      this.written = null;
      return;
    }
    const config = this.withoutDcs(bootstrapDcs);
    const content = JSON.stringify(config);
    if (content === this.written) return;
    try {
      await this.pg.saveDynamicConfigCache(config);
      this.written = content;
      this.lastFailure = null;
    } catch (error) {
      const failure = errorText(error);
      if (failure !== this.lastFailure)
        this.logger.warning(`could not write patroni.dynamic.json, trying again next cycle: ${failure}`);
      this.lastFailure = failure;
    }
  }

  private remember(config: Mapping): void {
    const text = JSON.stringify(config);
    if (text === this.inForceText) return;
    this.inForce = config;
    this.inForceText = text;
  }
}
