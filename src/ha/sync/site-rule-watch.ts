import { Logger } from '../../common/logger';
import { EffectiveDynamicConfig } from '../../config/config.types';
import { NodeEvents } from '../node-events';
import { SyncCandidates } from './sync-candidates';

/**
 * Says when `synchronous_site_count` stops and starts being met, once per episode: a warning and a
 * `sync.sites_unmet` cluster event when commits no longer reach the required sites (strict: they
 * wait; otherwise they are acknowledged within the reachable sites), info and `sync.sites_met` when
 * they do again.
 */
export class SiteRuleWatch {
  private unmet = false;

  constructor(
    private readonly logger: Logger,
    private readonly events: NodeEvents,
  ) {}

  observe(config: EffectiveDynamicConfig, picked: SyncCandidates, leaderSite: string | undefined): void {
    const required = config.synchronous_site_count;
    const unmet = required > 0 && picked.sitesMissing > 0;
    if (unmet === this.unmet) return;
    this.unmet = unmet;
    if (!unmet) {
      const log = `synchronous_site_count ${required} is met again: commits reach ${required} site(s) other than ${leaderSite}`;
      this.logger.info(log);
      this.events.recordCluster('sync.sites_met', log, { required });
      return;
    }
    const where = leaderSite ? `other than ${leaderSite}` : `other than the leader's (the leader has no site setting)`;
    const outcome = config.synchronous_mode_strict
      ? 'synchronous_mode_strict: commits wait until a standby there confirms them'
      : `commits are acknowledged by standbys of the sites reachable now (set synchronous_mode_strict to make them wait)`;
    const log = `synchronous_site_count ${required} is not met: ${picked.sitesMissing} of the required site(s) ${where} have no eligible synchronous standby; ${outcome}`;
    this.logger.warning(log);
    this.events.recordCluster('sync.sites_unmet', log, {
      required,
      missing: picked.sitesMissing,
      strict: config.synchronous_mode_strict,
    });
  }

  /** A new term: the first cycle says again where the rule stands, if it is unmet. */
  reset(): void {
    this.unmet = false;
  }
}
