/**
 * A hot standby refuses to start when one of these settings is lower than on the primary that wrote its WAL
 * ("insufficient parameter settings"), and pg_control records the primary's values. As Patroni, a server
 * started in recovery (a replica, a custom bootstrap restoring a backup) runs with the higher of the two.
 */
const CONTROL_DATA_FIELDS: Record<string, string> = {
  max_connections: 'max_connections setting',
  max_prepared_transactions: 'max_prepared_xacts setting',
  max_locks_per_transaction: 'max_locks_per_xact setting',
  max_worker_processes: 'max_worker_processes setting',
  max_wal_senders: 'max_wal_senders setting',
};

/** PostgreSQL's own defaults, what the server runs with when nothing sets them. */
const POSTGRES_DEFAULTS: Record<string, number> = {
  max_connections: 100,
  max_prepared_transactions: 0,
  max_locks_per_transaction: 64,
  max_worker_processes: 8,
  max_wal_senders: 10,
};

export interface RaisedSetting {
  name: string;
  configured: number;
  controlData: number;
}

/** The values pg_control recorded (pg_controldata's output read with LC_ALL=C), by parameter name. */
export function controlDataMinimums(controlDataText: string): Record<string, number> {
  const fields = new Map<string, string>();
  for (const line of controlDataText.split('\n')) {
    const separator = line.indexOf(':');
    if (separator > 0) fields.set(line.slice(0, separator).trim(), line.slice(separator + 1).trim());
  }
  const minimums: Record<string, number> = {};
  for (const [name, field] of Object.entries(CONTROL_DATA_FIELDS)) {
    const value = Number(fields.get(field));
    if (fields.has(field) && Number.isInteger(value)) minimums[name] = value;
  }
  return minimums;
}

/** Raises `parameters` in place to `minimums` where they are lower (or unset and PostgreSQL's default is lower). */
export function raiseToControlData(
  parameters: Record<string, string | number | boolean>,
  minimums: Record<string, number>,
): RaisedSetting[] {
  const raised: RaisedSetting[] = [];
  for (const [name, controlData] of Object.entries(minimums)) {
    const given = parameters[name];
    const configured = given === undefined ? POSTGRES_DEFAULTS[name] : Number.parseInt(String(given), 10);
    // A value PostgreSQL will refuse anyway is left for its own message.
    if (!Number.isInteger(configured) || controlData <= configured) continue;
    parameters[name] = controlData;
    raised.push({ name, configured, controlData });
  }
  return raised;
}

/** Patroni's log line, so searches keep working. */
export function raisedSettingLine({ name, configured, controlData }: RaisedSetting): string {
  return `${name} value in pg_controldata: ${controlData}, in the global configuration: ${configured}. pg_controldata value will be used`;
}
