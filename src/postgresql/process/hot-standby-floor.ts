/**
 * Settings a server in recovery must not have lower than the primary that wrote the WAL: PostgreSQL records the
 * primary's in pg_control, and a recovery with a lower one stops with "recovery aborted because of insufficient
 * parameter settings". As the reference (`effective_configuration`): such a server starts with pg_control's value.
 */
const CONTROL_DATA_FIELDS: Record<string, string> = {
  max_connections: 'max_connections setting',
  max_prepared_transactions: 'max_prepared_xacts setting',
  max_locks_per_transaction: 'max_locks_per_xact setting',
  max_worker_processes: 'max_worker_processes setting',
  max_wal_senders: 'max_wal_senders setting',
};

/** PostgreSQL's defaults: an unset setting is raised only above its default (initdb may have written it lower, rarely). */
const POSTGRES_DEFAULTS: Record<string, number> = {
  max_connections: 100,
  max_prepared_transactions: 0,
  max_locks_per_transaction: 64,
  max_worker_processes: 8,
  max_wal_senders: 10,
};

/** The recorded values of those settings, from pg_controldata's output (read with LC_ALL=C). */
export function hotStandbyFloor(controlData: string): Record<string, number> {
  const floor: Record<string, number> = {};
  for (const line of controlData.split('\n')) {
    const separator = line.indexOf(':');
    if (separator < 0) continue;
    const field = line.slice(0, separator).trim();
    const name = Object.keys(CONTROL_DATA_FIELDS).find((key) => CONTROL_DATA_FIELDS[key] === field);
    const value = Number.parseInt(line.slice(separator + 1).trim(), 10);
    if (name && Number.isInteger(value)) floor[name] = value;
  }
  return floor;
}

/**
 * The parameters raised to the floor where they (or, unset, PostgreSQL's defaults) are lower, and
 * what was raised, for a log line.
 */
export function raisedToFloor(
  parameters: Record<string, string | number | boolean>,
  floor: Record<string, number>,
): { parameters: Record<string, string | number | boolean>; raised: string[] } {
  const result = { ...parameters };
  const raised: string[] = [];
  for (const [name, minimum] of Object.entries(floor)) {
    const given = Number.parseInt(String(result[name] ?? POSTGRES_DEFAULTS[name]), 10);
    if (Number.isInteger(given) && given >= minimum) continue;
    raised.push(`${name} ${result[name] ?? '(default)'} -> ${minimum}`);
    result[name] = minimum;
  }
  return { parameters: result, raised };
}
