import { HistoryEntry } from '../dcs/dcs.port';
import { RecordedEvent } from '../common/recorded-event';
import { Projection } from './projection';

/**
 * `/history`: one entry per timeline switch, `[timeline, lsn, reason, created_at, new_leader]`,
 * from the `timeline.created` facts the leader records when it reads PostgreSQL's timeline
 * history file. A timeline is recorded once; a repeated fact (another leader rebuilding the same
 * file) does not change it.
 */
export const historyProjection: Projection<HistoryEntry[]> = {
  initial: () => [],
  evolve(history, event: RecordedEvent) {
    if (event.type !== 'timeline.created' || !event.data) return history;
    const { timeline, lsn, reason, created_at, leader } = event.data as {
      timeline: number;
      lsn: number;
      reason: string;
      created_at: string;
      leader: string;
    };
    if (history.some((entry) => entry[0] === timeline)) return history;
    return [...history, [timeline, lsn, reason, created_at, leader] as HistoryEntry].sort((a, b) => a[0] - b[0]);
  },
};
