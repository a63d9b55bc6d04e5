/**
 * The PostgreSQL states of the spec (section 3), with their fixed numeric codes (never renumber:
 * monitoring stores them) and the text Patroni puts in the status document's `state`.
 */
export const POSTGRES_STATES = {
  initdb: { code: 0, text: 'initializing new cluster' },
  initdb_failed: { code: 1, text: 'initdb failed' },
  custom_bootstrap: { code: 2, text: 'running custom bootstrap script' },
  custom_bootstrap_failed: { code: 3, text: 'custom bootstrap failed' },
  creating_replica: { code: 4, text: 'creating replica' },
  running: { code: 5, text: 'running' },
  starting: { code: 6, text: 'starting' },
  bootstrap_starting: { code: 7, text: 'starting after custom bootstrap' },
  start_failed: { code: 8, text: 'start failed' },
  restarting: { code: 9, text: 'restarting' },
  restart_failed: { code: 10, text: 'restart failed' },
  stopping: { code: 11, text: 'stopping' },
  stopped: { code: 12, text: 'stopped' },
  stop_failed: { code: 13, text: 'stop failed' },
  crashed: { code: 14, text: 'crashed' },
} as const;

export type PostgresStateName = keyof typeof POSTGRES_STATES;

export const POSTGRES_STATE_NAMES = Object.keys(POSTGRES_STATES) as PostgresStateName[];

/** States in which the postmaster is up (or coming up) under Stator's control. */
export const POSTMASTER_UP_STATES: readonly PostgresStateName[] = [
  'running',
  'starting',
  'bootstrap_starting',
  'restarting',
  'stopping',
];

/** States that are themselves a long action: the HA loop waits for them to end. */
export const LONG_ACTION_STATES: readonly PostgresStateName[] = [
  'initdb',
  'custom_bootstrap',
  'creating_replica',
  'starting',
  'bootstrap_starting',
  'restarting',
  'stopping',
];

/** The `# Values:` line of the state metric. */
export function postgresStateLegend(): string {
  return POSTGRES_STATE_NAMES.map((name) => `${POSTGRES_STATES[name].code}=${name}`).join(', ');
}
