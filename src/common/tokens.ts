/** Nest injection tokens of the ports and of the node's composition. */
export const STATOR_CONFIG = Symbol('StatorConfig');
export const CLOCK = Symbol('Clock');
export const LOGGER = Symbol('Logger');
export const DCS = Symbol('Dcs');
export const EVENT_STORE = Symbol('EventStore');
export const EVENT_RECORDER = Symbol('EventRecorder');
export const POSTGRES_PROCESS = Symbol('PostgresProcess');
export const POSTGRES_QUERY = Symbol('PostgresQuery');
export const EVENT_LOG = Symbol('EventLog');
