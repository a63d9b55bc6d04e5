import { Clock } from '../common/clock';
import { parseLsn } from '../common/lsn';
import { errorText } from '../common/error-text';
import { EffectiveDynamicConfig } from '../config/config.types';
import { PermanentSlot } from '../config/slots-config';
import { ClusterView, Dcs, HistoryEntry, LeaderStatus } from '../dcs/dcs.port';
import { Logger } from '../common/logger';
import { PostgresQuery, PostgresSample, SlotReading } from '../postgresql/postgres.port';
import { keepSlots } from './slot-keeper';
import { planSlots, retainedSlots, SlotPlan, slotNameOf } from './slot-plan';
import { MemberSightings } from './member-sightings';
import { isoWithOffset, NodeEvents } from './node-events';

/** The newest `maxEntries` of `entries` (0: all), as the reference trims `/history` (`max_timelines_history`). */
export function newestEntries<T>(entries: T[], maxEntries: number): T[] {
  return maxEntries > 0 ? entries.slice(-maxEntries) : entries;
}

/** Optime, history, members' and permanent slots: what the lock holder publishes and keeps each cycle. */
export class LeaderDuties {
  private publishedStatus = '';
  /** The last failure to create the permanent logical slots, said once. */
  private logicalSlotError: string | null = null;

  constructor(
    private readonly name: string,
    private readonly dcs: Dcs,
    private readonly query: PostgresQuery,
    private readonly clock: Clock,
    private readonly events: NodeEvents,
    private readonly sightings: MemberSightings,
    private readonly tags: () => Record<string, unknown>,
    private readonly logger: Logger,
    /** This node's `site` setting: `current_site` in `/status` while it leads. */
    private readonly site?: string,
  ) {}

  /** `reading`: the slots as this cycle's reading found them (see PostgresQuery.syncPhysicalSlots). */
  async perform(
    cluster: ClusterView | null,
    sample: PostgresSample | null,
    dynamic: EffectiveDynamicConfig,
    reading: SlotReading = {},
  ): Promise<void> {
    if (!cluster || !sample) return;
    const departed = this.sightings.departedWithin(cluster, dynamic.member_slots_ttl, this.clock.now());
    const plan = this.plan(cluster, dynamic, departed);
    if (plan.logical.length > 0 && !sample.inRecovery) await this.keepLogicalSlots(plan.logical);
    // The slots first, so that a member's new slot is in this cycle's `/status`, not a loop_wait later; their failure
    // is this cycle's, after the optime and the history are published.
    const slotFailure = await this.keepPhysicalSlots(plan, dynamic, reading, sample).then(
      () => null,
      (error: unknown) => ({ error }),
    );
    // The slots' positions go with the optime, so that every replica keeps its copies in step; a
    // failed reading never holds the optime back. A logical slot's position is where its consumer confirmed.
    const status: LeaderStatus = { optime: sample.walPosition };
    const slots = await this.publishedPositions(plan, dynamic, sample.walPosition);
    if (Object.keys(slots).length > 0) status.slots = slots;
    const retain = retainedSlots(cluster, this.name, dynamic, departed);
    if (retain) status.retain_slots = retain;
    if (this.site) status.current_site = this.site;
    if (JSON.stringify(status) !== this.publishedStatus) {
      await this.dcs.setStatus(status);
      this.publishedStatus = JSON.stringify(status);
    }
    const history = cluster.history?.value;
    if (sample.timeline === 1 && !history) await this.dcs.setHistory([]);
    const lastTimeline = history && history.length > 0 ? Number(history[history.length - 1][0]) : 0;
    if (sample.timeline > 1 && (!history || lastTimeline !== sample.timeline - 1)) {
      await this.dcs.setHistory(
        await this.readTimelineHistory(sample.timeline, history ?? [], dynamic.max_timelines_history),
      );
    }
    if (slotFailure) throw slotFailure.error;
  }

  /**
   * The slots alone, as `perform` keeps them, nothing written to the DCS: what a failsafe leader does
   * while the DCS is down, from the last view read (see failsafeLeaderView).
   */
  async keepSlotsOnly(
    cluster: ClusterView,
    sample: PostgresSample,
    dynamic: EffectiveDynamicConfig,
    reading: SlotReading = {},
  ): Promise<void> {
    const departed = this.sightings.departedWithin(cluster, dynamic.member_slots_ttl, this.clock.now());
    const plan = this.plan(cluster, dynamic, departed);
    if (plan.logical.length > 0 && !sample.inRecovery) await this.keepLogicalSlots(plan.logical);
    await this.keepPhysicalSlots(plan, dynamic, reading, sample);
  }

  private async keepPhysicalSlots(
    plan: SlotPlan,
    dynamic: EffectiveDynamicConfig,
    reading: SlotReading,
    sample: PostgresSample,
  ): Promise<void> {
    if (!dynamic.use_slots) return;
    const ports = { query: this.query, events: this.events, logger: this.logger };
    await keepSlots(ports, plan, dynamic, reading, !sample.inRecovery);
  }

  /**
   * Where this leader's slots stand, for `/status`: with `member_slots_ttl` every slot it keeps and
   * its own name at its WAL position (so that each replica moves its copies of the members' slots
   * forward, as Patroni 4.1); with 0, the permanent slots only.
   */
  private async publishedPositions(
    plan: SlotPlan,
    dynamic: EffectiveDynamicConfig,
    walPosition: number,
  ): Promise<Record<string, number>> {
    if (!dynamic.use_slots) return {};
    const permanent = new Set(dynamic.slots.map((slot) => slot.name));
    const own = slotNameOf(this.name);
    const everySlot = dynamic.member_slots_ttl > 0;
    const physical = plan.physical.map((slot) => slot.name).filter((name) => everySlot || permanent.has(name));
    const positions = {
      ...(physical.length > 0 ? await this.query.physicalSlotPositions(physical).catch(() => ({})) : {}),
      ...(plan.logical.length > 0
        ? await this.query.logicalSlotPositions(plan.logical.map((slot) => slot.name)).catch(() => ({}))
        : {}),
    };
    return everySlot || permanent.has(own) ? { ...positions, [own]: walPosition } : positions;
  }

  /** The positions `/status` would carry now, from the last view read: what a failsafe call sends while the DCS is down. */
  async slotPositions(
    cluster: ClusterView,
    dynamic: EffectiveDynamicConfig,
    walPosition: number,
  ): Promise<Record<string, number>> {
    const departed = this.sightings.departedWithin(cluster, dynamic.member_slots_ttl, this.clock.now());
    return this.publishedPositions(this.plan(cluster, dynamic, departed), dynamic, walPosition);
  }

  private plan(cluster: ClusterView, dynamic: EffectiveDynamicConfig, departed: string[]): SlotPlan {
    return planSlots({ self: { name: this.name, tags: this.tags() }, isLeader: true, cluster, dynamic, departed });
  }

  /**
   * At promotion: the slots of every member (and of those that left less than `member_slots_ttl`
   * ago) and the permanent ones, before the first replica connects. From then on `perform` keeps
   * them each cycle: pg_rewind and reclones drop slots behind the agent's back.
   */
  async syncMemberSlots(cluster: ClusterView, dynamic: EffectiveDynamicConfig): Promise<void> {
    const departed = this.sightings.departedWithin(cluster, dynamic.member_slots_ttl, this.clock.now());
    await keepSlots(
      { query: this.query, events: this.events, logger: this.logger },
      this.plan(cluster, dynamic, departed),
      dynamic,
      {},
      false,
    );
  }

  /**
   * The primary creates each permanent logical slot it lacks, in its database. A failure (wal_level
   * below logical, a missing plugin...) is an event when it first happens or changes, not every cycle.
   */
  private async keepLogicalSlots(slots: PermanentSlot[]): Promise<void> {
    try {
      for (const name of await this.query.createLogicalSlots(slots)) {
        this.events.recordCluster('slot.created', `logical slot ${name} created`, { slot: name, type: 'logical' });
      }
      this.logicalSlotError = null;
    } catch (error) {
      const message = errorText(error);
      if (message !== this.logicalSlotError) {
        this.events.recordCluster('slot.create_failed', `creating permanent logical slots failed: ${message}`, {
          slots: slots.map((slot) => slot.name),
        });
      }
      this.logicalSlotError = message;
    }
  }

  /**
   * Rebuilds `/history` from `pg_wal/<TL>.history`, keeping stored timestamps of known entries and only the
   * newest `maxEntries` (`max_timelines_history`, 0: all).
   */
  private async readTimelineHistory(
    timeline: number,
    stored: HistoryEntry[],
    maxEntries: number,
  ): Promise<HistoryEntry[]> {
    const file = `pg_wal/${timeline.toString(16).toUpperCase().padStart(8, '0')}.history`;
    const rows = await this.query.query<{ content: string }>('SELECT pg_read_file($1) AS content', [file]);
    const lines = newestEntries(rows[0]?.content.split('\n').filter((line) => /^\d+\t/.test(line)) ?? [], maxEntries);
    return lines.map((line, index) => {
      const [tl, lsn, ...reason] = line.split('\t');
      const entryTimeline = Number(tl);
      const position = parseLsn(lsn);
      const known = stored.find((e) => Number(e[0]) === entryTimeline && Number(e[1]) === position);
      if (known && known.length >= 5) return known;
      const newest = index === lines.length - 1;
      const entry = [
        entryTimeline,
        position,
        reason.join('\t').trim(),
        isoWithOffset(this.clock.now()),
        newest ? this.name : (known?.[4] ?? ''),
      ] as HistoryEntry;
      // The fact behind /history: recorded as the leader reads it from PostgreSQL's own file.
      this.events.recordCluster('timeline.created', `pg_wal/${file.slice(7)}`, {
        timeline: entry[0],
        lsn: entry[1],
        reason: entry[2],
        created_at: entry[3],
        leader: entry[4],
      });
      return entry;
    });
  }
}
