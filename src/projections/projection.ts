import { RecordedEvent } from '../common/recorded-event';

/**
 * A projection is a pure fold over recorded events: `evolve(state, event)` from `initial()`.
 * The same function serves the live view (one event at a time) and a rebuild from zero (all of
 * them), so the two cannot drift apart.
 */
export interface Projection<S> {
  initial(): S;
  evolve(state: S, event: RecordedEvent): S;
}

export function fold<S>(projection: Projection<S>, events: Iterable<RecordedEvent>): S {
  let state = projection.initial();
  for (const event of events) state = projection.evolve(state, event);
  return state;
}
