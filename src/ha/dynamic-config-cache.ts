import { errorText } from '../common/error-text';
import { Logger } from '../common/logger';
import { PostgresProcess } from '../postgresql/postgres.port';

/**
 * Keeps `patroni.dynamic.json` in the data directory equal to the dynamic configuration in force (the DCS
 * `/config`, else `bootstrap.dcs`), as Patroni does: tools and runbooks read (or remove) it there. Written
 * only into a data directory that holds a cluster and that no procedure (clone, reinit, bootstrap) is
 * replacing; a failed write is logged once and tried again on the next cycle.
 */
export class DynamicConfigCache {
  /** What the file holds as far as this agent knows; null when it must be written again. */
  private written: string | null = null;
  private lastFailure: string | null = null;

  constructor(
    private readonly pg: PostgresProcess,
    private readonly logger: Logger,
  ) {}

  async keep(config: Record<string, unknown>, dataDirReady: boolean): Promise<void> {
    if (!dataDirReady) {
      // A clone or reinit replaces the directory, and the file with it.
      this.written = null;
      return;
    }
    const content = JSON.stringify(config);
    if (content === this.written) return;
    try {
      await this.pg.saveDynamicConfigCache(config);
      this.written = content;
      this.lastFailure = null;
    } catch (error) {
      const failure = errorText(error);
      if (failure !== this.lastFailure) this.logger.warning(`could not write patroni.dynamic.json, trying again next cycle: ${failure}`);
      this.lastFailure = failure;
    }
  }
}
