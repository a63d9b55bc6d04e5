import { EventQueueState, EventRecorder } from '../events/event-recorder';
import { FenceState, PostgresProcess } from '../postgresql/postgres.port';

/**
 * What the node's self-diagnosis reads beside its view (NodeView), from memory only: the fence as
 * this agent last set it and the event recorder's queue. Never a round trip to the fence, etcd or SQL.
 */
export interface NodeDiagnostics {
  fence: FenceState;
  eventQueue: EventQueueState;
}

export interface NodeDiagnosticsSource {
  diagnostics(): NodeDiagnostics;
}

export const NODE_DIAGNOSTICS = Symbol('NodeDiagnosticsSource');

export function nodeDiagnosticsSource(pg: PostgresProcess, recorder: EventRecorder): NodeDiagnosticsSource {
  return { diagnostics: () => ({ fence: pg.fenceState(), eventQueue: recorder.queueState() }) };
}
