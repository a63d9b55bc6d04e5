// The event's shape sits in common/ so that the projections folded from it need nothing of the store.
export type { NewEvent, RecordedEvent } from '../common/recorded-event';
