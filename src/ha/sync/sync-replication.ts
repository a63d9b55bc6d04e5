import { sleep, TimerClock } from '../../common/clock';
import { errorText } from '../../common/error-text';
import { Logger } from '../../common/logger';
import { EffectiveDynamicConfig } from '../../config/config.types';
import { ClusterView, Dcs, Revision, SyncState } from '../../dcs/dcs.port';
import { PostgresQuery, PostgresSample } from '../../postgresql/postgres.port';
import { formatStandbyNames, parseStandbyNames, STRICT_PLACEHOLDER } from '../../postgresql/standby-names';
import { NodeEvents } from '../node-events';
import { planPriority, SyncStep } from './priority-plan';
import { planQuorum } from './quorum-plan';
import { SyncReadiness } from './readiness';
import { holdForSites } from './site-placement';
import { SiteRuleWatch } from './site-rule-watch';
import {
  leaderSiteOf,
  pickSynchronous,
  quorumAcknowledgedPosition,
  streamingPositions,
  SyncCandidates,
  syncCandidates,
} from './sync-candidates';
import { syncKeyValue, syncQuorumOf, syncStandbysOf } from './sync-key';

export interface SyncReplicationDeps {
  name: string;
  dcs: Dcs;
  query: PostgresQuery;
  clock: TimerClock;
  logger: Logger;
  events: NodeEvents;
  /** A fresh reading of the local server. */
  takeSample: () => Promise<PostgresSample | null>;
  /** Writes the current parameters (synchronous_standby_names included) and reloads the server. */
  reconfigure: () => void;
}

/** How long a changed synchronous_standby_names may take to be in force after the reload. */
const RELOAD_WAIT_MS = 2_000;
/** Before looking again at standbys just listed: long enough for their first reply after the WAL nudge. */
const RECHECK_DELAY_MS = 500;

/**
 * The lock holder's side of synchronous replication: keeps synchronous_standby_names and `/sync` in
 * step each cycle (reference-behavior 3.9), prepares both before a promotion, and gives the user's
 * own setting back when the mode is turned off. It runs only in a cycle that confirmed the lock, and
 * every `/sync` write also requires the lock in the DCS, so a node that lost it relaxes nothing.
 */
export class SyncReplication {
  /** What this leader decided synchronous_standby_names is; null: not decided in this term. */
  private decided: string | null = null;
  private readonly readiness = new SyncReadiness();
  private strictHoldAnnounced = false;
  private readonly siteRule: SiteRuleWatch;

  constructor(private readonly deps: SyncReplicationDeps) {
    this.siteRule = new SiteRuleWatch(deps.logger, deps.events);
  }

  /**
   * synchronous_standby_names for the next configuration write, or undefined to keep the user's.
   * Without a decision of this term the value in force on a running primary is kept, and any other
   * server gets the placeholder that lets no commit through: it matters only if it is promoted,
   * and a promotion decides first.
   */
  standbyNamesFor(
    config: EffectiveDynamicConfig,
    sample: PostgresSample | null,
    lockHeld: boolean,
  ): string | undefined {
    if (config.synchronous_mode === 'off') return undefined;
    if (lockHeld && this.decided !== null) return this.decided;
    if (sample && !sample.inRecovery) return sample.synchronousStandbyNames;
    return config.synchronous_mode === 'quorum' ? `ANY 1 (${STRICT_PLACEHOLDER})` : STRICT_PLACEHOLDER;
  }

  /** A new term (or the end of one): nothing decided, nothing known ready. */
  forget(): void {
    this.decided = null;
    this.readiness.reset();
    this.strictHoldAnnounced = false;
    this.siteRule.reset();
  }

  /** One cycle of the confirmed lock holder running as primary. */
  async manage(cluster: ClusterView, sample: PostgresSample, config: EffectiveDynamicConfig): Promise<void> {
    if (config.synchronous_mode === 'off') return this.disable(cluster);
    const { name, logger } = this.deps;
    let revision: Revision = cluster.sync?.modRevision ?? 'absent';
    let sync: SyncState | null = cluster.sync?.value ?? null;
    if (!sync?.leader || sync.leader !== name) {
      if (sync?.leader && config.synchronous_mode !== 'quorum')
        logger.warning(
          `Inconsistent state of /sync key detected, leader = ${sync.leader} doesn't match ${name}, updating synchronous replication key`,
        );
      // In quorum mode the resolver moves leadership of the key itself, keeping its quorum.
      if (!sync?.leader || config.synchronous_mode !== 'quorum') {
        const written = await this.writeSync(
          syncKeyValue(name, []),
          revision,
          sync?.leader ? 'took over the synchronous replication key' : 'Enabled synchronous replication',
        );
        if (written === null) return;
        revision = written;
        sync = syncKeyValue(name, []);
      }
    }
    let current = sample;
    for (let pass = 0; pass < 2; pass++) {
      if (this.readiness.observe(current.synchronousStandbyNames, current.walPosition)) await this.nudgeWal();
      const candidates = syncCandidates(name, cluster, current);
      const ready = this.readiness.update(candidates, sync, config.synchronous_mode === 'quorum');
      const acknowledgedUpTo = config.synchronous_mode === 'quorum' ? this.acknowledgedPosition(current) : 0;
      const leaderSite = leaderSiteOf(cluster, name);
      const picked = pickSynchronous(candidates, ready, current.walPosition, config, acknowledgedUpTo, leaderSite);
      this.siteRule.observe(config, picked, leaderSite);
      const steps = this.plan(sync!, current, picked, config);
      const outcome = await this.carryOut(steps, sync!, revision, config);
      if (outcome === null) return;
      ({ sync, revision } = outcome);
      if (!steps.some((step) => step.type === 'recheck')) return;
      await sleep(this.deps.clock, RECHECK_DELAY_MS);
      const fresh = await this.deps.takeSample();
      if (!fresh || fresh.inRecovery) return;
      current = fresh;
    }
  }

  /**
   * Before this node promotes (reference `process_sync_replication_prepromote`): `/sync` names it,
   * by compare-and-set so a concurrent change postpones the promotion; strict mode keeps the other
   * known synchronous members and so keeps commits waiting until one of them confirms.
   */
  async beforePromote(cluster: ClusterView | null, config: EffectiveDynamicConfig): Promise<boolean> {
    this.forget();
    if (config.synchronous_mode === 'off' || !cluster) return true;
    const { name } = this.deps;
    const sync = cluster.sync?.value ?? null;
    const members = sync?.leader ? [sync.leader, ...syncStandbysOf(sync)] : [];
    const others = members.filter((member) => member.toLowerCase() !== name.toLowerCase());
    const siteOf = (member: string) =>
      cluster.members.find((m) => m.name.toLowerCase() === member.toLowerCase())?.data.site;
    const sites = (names: string[], count: number, quorum: boolean) =>
      holdForSites(
        names,
        count,
        quorum,
        config.synchronous_mode_strict,
        siteOf,
        leaderSiteOf(cluster, name),
        config.synchronous_site_count,
        STRICT_PLACEHOLDER,
      );
    if (config.synchronous_mode === 'quorum') {
      const quorum = syncQuorumOf(sync);
      const wasVoter = members.some((member) => member.toLowerCase() === name.toLowerCase());
      const count = Math.max(members.length - quorum - 1 + (wasVoter ? 0 : 1), config.synchronous_mode_strict ? 1 : 0);
      const held = sites(others, count, true);
      this.decided = formatStandbyNames(held.names, held.count, true);
      return true;
    }
    const keep = config.synchronous_mode_strict ? others : [];
    const written = await this.writeSync(
      syncKeyValue(name, keep),
      cluster.sync?.modRevision ?? 'absent',
      `before promotion: synchronous standbys ${keep.join(', ') || 'none'}`,
    );
    if (written === null) return false;
    const held = config.synchronous_mode_strict ? sites(keep, keep.length, false) : { names: keep, count: keep.length };
    this.decided = formatStandbyNames(
      held.names,
      config.synchronous_mode_strict && held.names.length === 0 ? 1 : null,
      false,
    );
    return true;
  }

  private plan(
    sync: SyncState,
    sample: PostgresSample,
    picked: SyncCandidates,
    config: EffectiveDynamicConfig,
  ): SyncStep[] {
    const { active, confirmed, sitesMissing } = picked;
    let standbyNames;
    try {
      standbyNames = parseStandbyNames(sample.synchronousStandbyNames);
    } catch (error) {
      this.deps.logger.warning(errorText(error));
      standbyNames = { kind: 'off' as const, count: 0, members: [], hasStar: false };
    }
    if (config.synchronous_mode === 'quorum') {
      return planQuorum({
        leader: sync.leader ?? this.deps.name,
        me: this.deps.name,
        quorum: syncQuorumOf(sync),
        voters: syncStandbysOf(sync),
        currentValue: sample.synchronousStandbyNames,
        standbyNames,
        active,
        confirmed,
        strict: config.synchronous_mode_strict,
        syncWanted: picked.syncWanted,
        sitesMissing,
      });
    }
    return planPriority({
      voters: syncStandbysOf(sync),
      currentValue: sample.synchronousStandbyNames,
      standbyNames,
      active,
      confirmed,
      strict: config.synchronous_mode_strict,
      sitesMissing,
    });
  }

  /** Carries the steps out in order; null when a `/sync` write failed (someone else changed it: next cycle). */
  private async carryOut(
    steps: SyncStep[],
    sync: SyncState,
    revision: Revision,
    config: EffectiveDynamicConfig,
  ): Promise<{ sync: SyncState; revision: Revision } | null> {
    const { logger } = this.deps;
    let holding = false;
    for (const step of steps) {
      switch (step.type) {
        case 'writeSync': {
          const next = syncKeyValue(step.leader ?? this.deps.name, step.standbys, step.quorum);
          const written = await this.writeSync(next, revision, step.log);
          if (written === null) return null;
          sync = next;
          revision = written;
          break;
        }
        case 'setStandbyNames':
          logger.info(step.log);
          await this.applyStandbyNames(step.value);
          break;
        case 'strictHold':
          holding = true;
          if (!this.strictHoldAnnounced) logger.warning(step.log);
          break;
        case 'recheck':
          break;
      }
    }
    this.strictHoldAnnounced = holding && config.synchronous_mode_strict;
    return { sync, revision };
  }

  private acknowledgedPosition(sample: PostgresSample): number {
    try {
      const listed = parseStandbyNames(sample.synchronousStandbyNames);
      return quorumAcknowledgedPosition(streamingPositions(sample), listed.members, listed.count);
    } catch {
      return Number.MAX_SAFE_INTEGER; // unknown setting: nobody counts as holding every commit
    }
  }

  /** Sets synchronous_standby_names and waits (briefly) until the server has it in force. */
  private async applyStandbyNames(value: string): Promise<void> {
    const { clock, takeSample, reconfigure, logger } = this.deps;
    this.decided = value;
    reconfigure();
    const deadline = clock.monotonic() + RELOAD_WAIT_MS;
    for (;;) {
      await sleep(clock, 50);
      const sample = await takeSample();
      if (sample?.synchronousStandbyNames === value) return;
      if (clock.monotonic() >= deadline) {
        logger.warning(
          `synchronous_standby_names is not yet ${JSON.stringify(value)} ${RELOAD_WAIT_MS} ms after the reload`,
        );
        return;
      }
    }
  }

  /** Mode off: `/sync` goes first (nobody counts as synchronous any more), then the user's own setting comes back. */
  private async disable(cluster: ClusterView): Promise<void> {
    if (cluster.sync?.value.leader) {
      const deleted = await this.writeSync(null, cluster.sync.modRevision, 'Disabled synchronous replication');
      if (deleted === null) return;
    }
    if (this.decided !== null) {
      this.forget();
      this.deps.reconfigure();
    }
  }

  private async writeSync(state: SyncState | null, revision: Revision, log: string): Promise<Revision | null> {
    const { dcs, logger, events } = this.deps;
    const written = await dcs.setSync(state, revision).catch((error) => {
      logger.warning(`writing the synchronous replication key failed: ${errorText(error)}`);
      return null;
    });
    if (written === null) {
      logger.info('Synchronous replication key updated by someone else.');
      return null;
    }
    logger.info(log);
    events.recordCluster(state ? 'sync.changed' : 'sync.disabled', log, state ? { ...state } : {});
    return written;
  }

  /** A little WAL, not waited for by any standby, so that standbys report their positions now. */
  private async nudgeWal(): Promise<void> {
    await this.deps.query
      .query(`DO $$ BEGIN SET LOCAL synchronous_commit = 'off'; PERFORM pg_catalog.pg_current_xact_id(); END $$`)
      .catch((error) =>
        this.deps.logger.warning(`could not write WAL for the synchronous standbys to confirm: ${errorText(error)}`),
      );
  }
}
