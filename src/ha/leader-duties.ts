import { Clock } from '../common/clock';
import { parseLsn } from '../common/lsn';
import { ClusterView, Dcs, HistoryEntry } from '../dcs/dcs.port';
import { PostgresQuery, PostgresSample } from '../postgresql/postgres.port';
import { downstreamMembers } from './cascade';
import { isoWithOffset, NodeEvents } from './node-events';

/** Slot names as Patroni derives them from member names. */
export function slotNameOf(memberName: string): string {
  return memberName.toLowerCase().replace(/[^a-z0-9_]/g, '_');
}

/** Optime, history and members' slots: what the lock holder publishes and keeps each cycle. */
export class LeaderDuties {
  private publishedOptime: number | null = null;

  constructor(
    private readonly name: string,
    private readonly dcs: Dcs,
    private readonly query: PostgresQuery,
    private readonly clock: Clock,
    private readonly events: NodeEvents,
  ) {}

  async perform(cluster: ClusterView | null, sample: PostgresSample | null, useSlots: boolean): Promise<void> {
    if (!cluster || !sample) return;
    if (sample.walPosition !== this.publishedOptime) {
      await this.dcs.setStatus({ optime: sample.walPosition });
      this.publishedOptime = sample.walPosition;
    }
    const history = cluster.history?.value;
    if (sample.timeline === 1 && !history) await this.dcs.setHistory([]);
    const lastTimeline = history && history.length > 0 ? Number(history[history.length - 1][0]) : 0;
    if (sample.timeline > 1 && (!history || lastTimeline !== sample.timeline - 1)) {
      await this.dcs.setHistory(await this.readTimelineHistory(sample.timeline, history ?? []));
    }
    if (useSlots) await this.syncMemberSlots(cluster);
  }

  /**
   * One physical slot per member that streams from the leader (not those cascading from a replica),
   * none for members that left. Checked every cycle rather than cached: pg_rewind and reclones drop
   * slots behind the agent's back.
   */
  async syncMemberSlots(cluster: ClusterView): Promise<void> {
    await this.query.syncPhysicalSlots(downstreamMembers(cluster, this.name, true).map(slotNameOf));
  }

  /** Rebuilds `/history` from `pg_wal/<TL>.history`, keeping stored timestamps of known entries. */
  private async readTimelineHistory(timeline: number, stored: HistoryEntry[]): Promise<HistoryEntry[]> {
    const file = `pg_wal/${timeline.toString(16).toUpperCase().padStart(8, '0')}.history`;
    const rows = await this.query.query<{ content: string }>('SELECT pg_read_file($1) AS content', [file]);
    const lines = rows[0]?.content.split('\n').filter((line) => /^\d+\t/.test(line)) ?? [];
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
