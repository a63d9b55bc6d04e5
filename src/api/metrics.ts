import { NodeView } from '../ha/node-view';
import { failoverPriority } from '../ha/cluster-snapshot';
import { POSTGRES_STATES, postgresStateLegend } from '../postgresql/postgres-states';
import { synchronousRoleOf } from './cluster-document';
import { ApiIdentity, buildStatusDocument, clusterViewIsFresh } from './status-document';

/** The Prometheus text exposition format served by `GET /metrics`. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** The first server version that has `pg_stat_wal_receiver`, below which the reference leaves out two metrics. */
const STREAMING_METRICS_SINCE = 90600;

interface Metric {
  name: string;
  help: string;
  /** An extra comment line between HELP and TYPE, as the reference writes for the state metric. */
  legend?: string;
  value: number | string;
}

/**
 * The body of `GET /metrics` (reference-behavior 1.4, newer exposition): one HELP/TYPE/sample
 * triple per metric in the reference's order, names prefixed `stator_` (or `patroni_` in
 * compatibility mode), built from the same status document `GET /stator` serves.
 *
 * Deliberate deviations, so that `promtool check metrics` accepts the output: no space between
 * the server_version name and its labels, and every metric is a gauge (the reference's WAL
 * position counters lack the `_total` suffix promtool requires, and can go back after a rewind).
 */
export function buildMetrics(view: NodeView, identity: ApiIdentity, now: number): string {
  const status = buildStatusDocument(view, identity, now);
  const xlog = (status.xlog ?? {}) as {
    location?: number;
    received_location?: number;
    replayed_location?: number;
    replayed_timestamp?: string | null;
    paused?: boolean;
  };
  const role = status.role;
  const serverVersion = typeof status.server_version === 'number' ? status.server_version : 0;
  const freshCluster = clusterViewIsFresh(view, now) ? view.cluster : null;
  const synchronousRole = role === 'replica' && freshCluster ? synchronousRoleOf(freshCluster, view.name) : null;
  const product = identity.productKey === 'patroni' ? 'Patroni' : 'Stator';
  const flag = (condition: boolean) => (condition ? 1 : 0);

  const metrics: Metric[] = [
    { name: 'version', help: `${product} semver without periods.`, value: paddedVersion(identity.version) },
    {
      name: 'postgres_running',
      help: 'Value is 1 if Postgres is running, 0 otherwise.',
      value: flag(view.pgState === 'running'),
    },
    {
      name: 'postmaster_start_time',
      help: 'Epoch seconds since Postgres started.',
      value: epochSeconds(status.postmaster_start_time as string | undefined),
    },
    { name: 'primary', help: 'Value is 1 if this node is the leader, 0 otherwise.', value: flag(role === 'primary') },
    {
      name: 'xlog_location',
      help: 'Current location of the Postgres transaction log, 0 if this node is not the leader.',
      value: xlog.location ?? 0,
    },
    {
      name: 'standby_leader',
      help: 'Value is 1 if this node is the standby_leader, 0 otherwise.',
      value: flag(role === 'standby_leader'),
    },
    { name: 'replica', help: 'Value is 1 if this node is a replica, 0 otherwise.', value: flag(role === 'replica') },
    {
      name: 'sync_standby',
      help: 'Value is 1 if this node is a sync standby, 0 otherwise.',
      value: flag(synchronousRole === 'sync_standby'),
    },
    {
      name: 'quorum_standby',
      help: 'Value is 1 if this node is a quorum standby, 0 otherwise.',
      value: flag(synchronousRole === 'quorum_standby'),
    },
    {
      name: 'xlog_received_location',
      help: 'Current location of the received Postgres transaction log, 0 if this node is not a replica.',
      value: xlog.received_location ?? 0,
    },
    {
      name: 'xlog_replayed_location',
      help: 'Current location of the replayed Postgres transaction log, 0 if this node is not a replica.',
      value: xlog.replayed_location ?? 0,
    },
    {
      name: 'xlog_replayed_timestamp',
      help: 'Current timestamp of the replayed Postgres transaction log, 0 if null.',
      value: epochSeconds(xlog.replayed_timestamp ?? undefined),
    },
    {
      name: 'xlog_paused',
      help: 'Value is 1 if the Postgres xlog is paused, 0 otherwise.',
      value: flag(xlog.paused === true),
    },
  ];
  if (serverVersion >= STREAMING_METRICS_SINCE) {
    metrics.push(
      {
        name: 'postgres_streaming',
        help: 'Value is 1 if Postgres is streaming, 0 otherwise.',
        value: flag(status.replication_state === 'streaming'),
      },
      {
        name: 'postgres_in_archive_recovery',
        help: 'Value is 1 if Postgres is replicating from archive, 0 otherwise.',
        value: flag(status.replication_state === 'in archive recovery'),
      },
    );
  }
  metrics.push(
    { name: 'postgres_server_version', help: 'Version of Postgres (if running), 0 otherwise.', value: serverVersion },
    {
      name: 'cluster_unlocked',
      help: 'Value is 1 if the cluster is unlocked, 0 if locked.',
      value: flag(status.cluster_unlocked === true),
    },
    {
      name: 'failsafe_mode_is_active',
      help: 'Value is 1 if failsafe mode is active, 0 if inactive.',
      value: flag(view.failsafeActive),
    },
    {
      name: 'failsafe_mode_enabled',
      help: 'Value is 1 if failsafe_mode is enabled, 0 otherwise.',
      value: flag(view.config.failsafe_mode),
    },
    {
      name: 'failsafe_member',
      help: 'Value is 1 if this node is a member of failsafe, 0 otherwise.',
      value: flag(view.config.failsafe_mode && Object.hasOwn(view.cluster?.failsafe?.value ?? {}, view.name)),
    },
    {
      name: 'postgres_timeline',
      help: 'Postgres timeline of this node (if running), 0 otherwise.',
      value: typeof status.timeline === 'number' ? status.timeline : 0,
    },
    {
      name: 'dcs_last_seen',
      help: `Epoch timestamp when DCS was last contacted successfully by ${product}.`,
      value: status.dcs_last_seen as number,
    },
    {
      name: 'pending_restart',
      help: 'Value is 1 if the node needs a restart, 0 otherwise.',
      value: flag(status.pending_restart === true),
    },
    {
      name: 'is_paused',
      help: 'Value is 1 if auto failover is disabled, 0 otherwise.',
      value: flag(status.pause === true),
    },
    {
      name: 'postgres_state',
      help: 'Numeric representation of Postgres state.',
      legend: `# Values: ${postgresStateLegend()}`,
      value: POSTGRES_STATES[view.pgState].code,
    },
    { name: 'failover_priority', help: 'Failover priority of this node.', value: failoverPriority(view.tags) },
  );

  const labels = `{scope="${escapeLabelValue(identity.scope)}",name="${escapeLabelValue(view.name)}"}`;
  const lines: string[] = [];
  for (const metric of metrics) {
    const name = `${identity.productKey}_${metric.name}`;
    lines.push(`# HELP ${name} ${metric.help}`);
    if (metric.legend) lines.push(metric.legend);
    lines.push(`# TYPE ${name} gauge`, `${name}${labels} ${metric.value}`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * `3.0.2` → `030002`: each numeric part of the version zero-padded to two digits, as the reference
 * writes `patroni_version`. A pre-release suffix (`-rc1`) is dropped so the value stays a number.
 */
export function paddedVersion(version: string): string {
  const numeric = /^\d+(?:\.\d+)*/.exec(version)?.[0] ?? '0';
  return numeric
    .split('.')
    .map((part) => part.padStart(2, '0'))
    .join('');
}

/**
 * `2024-08-28 19:39:26.352526+00:00` (the status document's timestamps) → `1724873966.352526`,
 * keeping the microseconds as the reference's float does; 0 when absent or unreadable.
 */
export function epochSeconds(timestamp: string | undefined): number {
  if (!timestamp) return 0;
  const match = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?(Z|[+-]\d{2}(?::?\d{2})?)?$/.exec(
    timestamp.trim(),
  );
  if (!match) return 0;
  const [, date, time, fraction, zone] = match;
  const offset =
    !zone || zone === 'Z' ? 'Z' : zone.length === 3 ? `${zone}:00` : zone.replace(/^([+-]\d{2}):?(\d{2})$/, '$1:$2');
  const wholeMs = Date.parse(`${date}T${time}${offset}`);
  if (Number.isNaN(wholeMs)) return 0;
  return Number(`${wholeMs / 1000}${fraction ? `.${fraction}` : ''}`);
}

/** Label values escape backslash, double quote and line feed (exposition format). */
function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}
