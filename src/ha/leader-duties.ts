import { Clock } from '../common/clock';
import { parseLsn } from '../common/lsn';
import { errorText } from '../common/error-text';
import { EffectiveDynamicConfig } from '../config/config.types';
import { PermanentSlot } from '../config/slots-config';
import { ClusterView, Dcs, HistoryEntry, LeaderStatus } from '../dcs/dcs.port';
import { PhysicalSlotState, PostgresQuery, PostgresSample, SlotChanges } from '../postgresql/postgres.port';
import { downstreamMembers } from './cascade';
import { MemberSightings } from './member-sightings';
import { isoWithOffset, NodeEvents } from './node-events';

/** Slot names as Patroni derives them from member names. */
export function slotNameOf(memberName: string): string {
  return memberName.toLowerCase().replace(/[^a-z0-9_]/g, '_');
}

/** The physical slots a node keeps: one per member streaming from it, and the permanent ones (never its own name). */
export function wantedPhysicalSlots(memberNames: string[], dynamic: EffectiveDynamicConfig, ownName: string): string[] {
  const permanent = dynamic.slots.filter((slot) => slot.type === 'physical').map((slot) => slot.name);
  return [...new Set([...memberNames.map(slotNameOf), ...permanent])].filter((name) => name !== slotNameOf(ownName));
}

/** Each slot a synchronisation created or dropped, as a fact in the event log. */
export function recordSlotChanges(events: NodeEvents, changes: SlotChanges): void {
  for (const name of changes.dropped) {
    const lost = changes.lost?.includes(name) === true;
    const message = lost ? `physical slot ${name} dropped because its wal_status was lost, to be created again` : `physical slot ${name} dropped`;
    events.recordCluster('slot.dropped', message, { slot: name, type: 'physical', ...(lost ? { wal_status: 'lost' } : {}) });
  }
  for (const name of changes.created) events.recordCluster('slot.created', `physical slot ${name} created`, { slot: name, type: 'physical' });
}

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
  ) {}

  /** `knownSlots`: the physical slots as this cycle's reading found them (see PostgresQuery.syncPhysicalSlots). */
  async perform(cluster: ClusterView | null, sample: PostgresSample | null, dynamic: EffectiveDynamicConfig, knownSlots?: PhysicalSlotState[]): Promise<void> {
    if (!cluster || !sample) return;
    // The permanent slots' positions go with the optime, so that replicas keep their copies in step;
    // a failed reading never holds the optime back. A logical slot's position is where its consumer confirmed.
    const permanent = dynamic.use_slots ? dynamic.slots : [];
    const physical = permanent.filter((slot) => slot.type === 'physical').map((slot) => slot.name);
    const logical = permanent.filter((slot) => slot.type === 'logical');
    if (logical.length > 0 && !sample.inRecovery) await this.keepLogicalSlots(logical);
    const slots = {
      ...(physical.length > 0 ? await this.query.physicalSlotPositions(physical).catch(() => ({})) : {}),
      ...(logical.length > 0 ? await this.query.logicalSlotPositions(logical.map((slot) => slot.name)).catch(() => ({})) : {}),
    };
    const status: LeaderStatus = { optime: sample.walPosition, ...(Object.keys(slots).length > 0 ? { slots } : {}) };
    if (JSON.stringify(status) !== this.publishedStatus) {
      await this.dcs.setStatus(status);
      this.publishedStatus = JSON.stringify(status);
    }
    const history = cluster.history?.value;
    if (sample.timeline === 1 && !history) await this.dcs.setHistory([]);
    const lastTimeline = history && history.length > 0 ? Number(history[history.length - 1][0]) : 0;
    if (sample.timeline > 1 && (!history || lastTimeline !== sample.timeline - 1)) {
      await this.dcs.setHistory(await this.readTimelineHistory(sample.timeline, history ?? [], dynamic.max_timelines_history));
    }
    if (dynamic.use_slots) await this.syncMemberSlots(cluster, dynamic, knownSlots);
  }

  /**
   * One physical slot per member that streams from the leader (not those cascading from a replica),
   * per member that left less than `member_slots_ttl` ago, and per permanent physical slot; none for
   * other members, unless `ignore_slots` covers it. Checked every cycle rather than cached: pg_rewind
   * and reclones drop slots behind the agent's back (the cycle's own reading of them, `knownSlots`,
   * spares the statement while they are in order).
   */
  async syncMemberSlots(cluster: ClusterView, dynamic: EffectiveDynamicConfig, knownSlots?: PhysicalSlotState[]): Promise<void> {
    const departed = this.sightings.departedWithin(cluster, dynamic.member_slots_ttl, this.clock.now());
    const members = [...downstreamMembers(cluster, this.name, true), ...departed];
    const changes = await this.query.syncPhysicalSlots(wantedPhysicalSlots(members, dynamic, this.name), dynamic.ignore_slots, knownSlots);
    recordSlotChanges(this.events, changes);
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
        this.events.recordCluster('slot.create_failed', `creating permanent logical slots failed: ${message}`, { slots: slots.map((slot) => slot.name) });
      }
      this.logicalSlotError = message;
    }
  }

  /**
   * Rebuilds `/history` from `pg_wal/<TL>.history`, keeping stored timestamps of known entries and only the
   * newest `maxEntries` (`max_timelines_history`, 0: all).
   */
  private async readTimelineHistory(timeline: number, stored: HistoryEntry[], maxEntries: number): Promise<HistoryEntry[]> {
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
      const entry = [entryTimeline, position, reason.join('\t').trim(), isoWithOffset(this.clock.now()), newest ? this.name : (known?.[4] ?? '')] as HistoryEntry;
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
