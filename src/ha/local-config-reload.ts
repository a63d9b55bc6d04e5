import { errorText } from '../common/error-text';
import { NodeActors } from './node-actors';
import { tagConflicts } from './tags';

/** POST /reload, SIGHUP: the file is read again; a bad file is reported and the running configuration kept. */
export function reloadLocalConfig(node: NodeActors): void {
  const { reloadConfig, logger } = node.deps;
  if (!reloadConfig) return;
  try {
    const reloaded = reloadConfig();
    // As Patroni's branch: the site is read at start only (members and /status must not change sites under a running leader).
    if (reloaded.site !== node.config.site)
      logger.warning(
        `site changed from ${node.config.site ?? '(none)'} to ${reloaded.site ?? '(none)'} in the file: it takes effect at the next start`,
      );
    const next = { ...reloaded, site: node.config.site };
    if (next.site === undefined) delete next.site;
    node.applyLocalConfig(next);
    for (const conflict of tagConflicts(node.config.tags)) logger.warning(conflict);
    logger.info('configuration reloaded');
  } catch (error) {
    logger.error(`reload failed, keeping the running configuration: ${errorText(error)}`);
  }
}
