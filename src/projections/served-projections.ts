import { HistoryEntry } from '../dcs/dcs.port';
import { RecordedEvent } from '../common/recorded-event';
import { ClusterProjection, clusterProjection } from './cluster';
import { historyProjection } from './history';
import { ScheduledOperation, scheduleProjection } from './schedule';

/**
 * The projections a node serves, folded together. Pure and free of Node APIs: besides the agent
 * and `stator audit`, the page at /ui runs this same code (bundled by scripts/build-ui.ts) for
 * its time travel.
 */
export interface ServedProjections {
  cluster: ClusterProjection;
  history: HistoryEntry[];
  schedule: ScheduledOperation[];
}

export function initialProjections(): ServedProjections {
  return {
    cluster: clusterProjection.initial(),
    history: historyProjection.initial(),
    schedule: scheduleProjection.initial(),
  };
}

export function evolveAll(state: ServedProjections, event: RecordedEvent): ServedProjections {
  return {
    cluster: clusterProjection.evolve(state.cluster, event),
    history: historyProjection.evolve(state.history, event),
    schedule: scheduleProjection.evolve(state.schedule, event),
  };
}

/** Every projection rebuilt from `from` (zero by default, or a checkpoint's projections). */
export function rebuildProjections(
  events: Iterable<RecordedEvent>,
  from: ServedProjections = initialProjections(),
): ServedProjections {
  let state = from;
  for (const event of events) state = evolveAll(state, event);
  return state;
}
