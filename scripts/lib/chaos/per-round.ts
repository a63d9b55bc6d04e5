import { SplitBrainInterval } from './checker';
import { Acknowledgement } from './writer';

/** What the checker found in one round's window: from its fault's start to the next round's (or the run's end). */
export interface RoundWrites {
  acknowledged: number;
  lost: number;
  /** Intervals in which two nodes acknowledged writes, starting in this window. */
  twoWriters: SplitBrainInterval[];
}

/**
 * The run's acknowledgements, lost writes and two-writer intervals split by round, each by the time it happened
 * (ms since the run began): a round owns what happened from its fault's start until the next fault's. Writes
 * before the first fault belong to no round.
 */
export function writesByRound(
  roundStarts: number[],
  acknowledged: Acknowledgement[],
  lost: Acknowledgement[],
  twoWriters: SplitBrainInterval[],
): RoundWrites[] {
  const roundOf = (at: number) => {
    let index = -1;
    while (index + 1 < roundStarts.length && roundStarts[index + 1] <= at) index++;
    return index;
  };
  const rounds: RoundWrites[] = roundStarts.map(() => ({ acknowledged: 0, lost: 0, twoWriters: [] }));
  for (const ack of acknowledged) {
    const round = rounds[roundOf(ack.at)];
    if (round) round.acknowledged++;
  }
  for (const ack of lost) {
    const round = rounds[roundOf(ack.at)];
    if (round) round.lost++;
  }
  for (const interval of twoWriters) rounds[roundOf(interval.fromMs)]?.twoWriters.push(interval);
  return rounds;
}
