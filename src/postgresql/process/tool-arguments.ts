import { parseLsn } from '../../common/lsn';
import { DataDirInfo } from '../postgres.port';

/* The PostgreSQL programs' arguments as Patroni's configuration gives them (initdb, pg_basebackup), and pg_controldata's answer. */

/** Extra initdb options in Patroni's `bootstrap.initdb` form: `'data-checksums'` or `{encoding: 'UTF8'}`. */
export type InitdbOptions = Array<string | Record<string, string>>;

/** pg_controldata's fields, read with LC_ALL=C. */
export function parseControlData(text: string): Partial<DataDirInfo> {
  const fields = new Map<string, string>();
  for (const line of text.split('\n')) {
    const separator = line.indexOf(':');
    if (separator > 0) fields.set(line.slice(0, separator).trim(), line.slice(separator + 1).trim());
  }
  const info: Partial<DataDirInfo> = {};
  const systemIdentifier = fields.get('Database system identifier');
  if (systemIdentifier) info.systemIdentifier = systemIdentifier;
  const clusterState = fields.get('Database cluster state');
  if (clusterState) info.clusterState = clusterState;
  const timeline = Number(fields.get("Latest checkpoint's TimeLineID"));
  if (Number.isInteger(timeline) && timeline > 0) info.timeline = timeline;
  const location = fields.get('Latest checkpoint location');
  if (location) info.checkpointLsn = parseLsn(location);
  const redoWalFile = fields.get("Latest checkpoint's REDO WAL file");
  if (redoWalFile) info.redoWalFile = redoWalFile;
  return info;
}

export function formatInitdbOptions(options: InitdbOptions): string[] {
  return options.flatMap((option) =>
    typeof option === 'string' ? [`--${option}`] : Object.entries(option).map(([key, value]) => `--${key}=${value}`),
  );
}

/**
 * pg_basebackup options from `postgresql.basebackup`, as Patroni passes them: `--name` or
 * `--name=value`. The ones Stator sets itself (where the data goes, from where, WAL method) are skipped.
 */
export function basebackupOptions(options: Array<string | Record<string, string>> | undefined): string[] {
  const owned = new Set([
    'pgdata',
    'D',
    'dbname',
    'd',
    'host',
    'h',
    'port',
    'p',
    'username',
    'U',
    'wal-method',
    'X',
    'checkpoint',
    'c',
  ]);
  return (options ?? []).flatMap((option) => {
    const [name, value] = typeof option === 'string' ? [option, undefined] : Object.entries(option)[0];
    if (owned.has(name)) return [];
    return [value === undefined ? `--${name}` : `--${name}=${value}`];
  });
}
