import { formatLsn } from '../common/lsn';
import { parsePatroniBoolean } from '../config/config-values';
import { syncNames } from '../ha/sync/sync-key';
import { ClusterView, DynamicConfig, Member, MemberData } from '../dcs/dcs.port';

export type ClusterMemberRole = 'leader' | 'standby_leader' | 'sync_standby' | 'quorum_standby' | 'replica';

/** Member-key fields copied into the member object when present, in the reference's order. */
const OPTIONAL_MEMBER_FIELDS = [
  'timeline',
  'pending_restart',
  'pending_restart_reason',
  'scheduled_restart',
  'tags',
  'site',
] as const;

/** Non-leaders' positions: the member-key field, and the names of the position and lag in the member object. */
const POSITIONS = [
  { field: 'receive_lsn', lsn: 'receive_lsn', lag: 'receive_lag' },
  { field: 'replay_lsn', lsn: 'replay_lsn', lag: 'replay_lag' },
  { field: 'xlog_location', lsn: 'lsn', lag: 'lag' },
] as const;

/**
 * The cluster document of `GET /cluster` (reference-behavior 1.5), from one DCS read: members
 * sorted by name with their role, state, addresses and (for non-leaders) positions and lag behind
 * the leader's last known position; `pause`, `scheduled_switchover` and `scope` as the reference.
 */
export function buildClusterDocument(cluster: ClusterView, scope: string): Record<string, unknown> {
  const config = cluster.config?.value ?? {};
  const leaderName = cluster.leader?.value ?? null;
  const leaderPosition = cluster.status?.value.optime ?? 0;
  const members = [...cluster.members]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((member) => memberObject(member, memberRole(member.name, leaderName, cluster, config), leaderPosition));

  const document: Record<string, unknown> = { members };
  if (parsePatroniBoolean(config.pause) === true) document.pause = true;
  const failover = cluster.failover?.value;
  if (failover?.scheduled_at) {
    const switchover: Record<string, string> = { at: pythonIsoformat(failover.scheduled_at) };
    if (failover.leader) switchover.from = failover.leader;
    if (failover.member) switchover.to = failover.member;
    else if (failover.site) switchover.to = `site ${failover.site}`;
    document.scheduled_switchover = switchover;
  }
  document.scope = scope;
  return document;
}

/**
 * `sync_standby` (or `quorum_standby` in quorum commit mode) when synchronous mode is on and the
 * `sync` key names the member; null otherwise. Patroni compares names case-insensitively.
 */
export function synchronousRoleOf(cluster: ClusterView, memberName: string): 'sync_standby' | 'quorum_standby' | null {
  const config = cluster.config?.value ?? {};
  const quorum = config.synchronous_mode === 'quorum';
  const synchronous = (quorum || parsePatroniBoolean(config.synchronous_mode) === true) && !isStandbyCluster(config);
  if (!synchronous || !syncNames(cluster.sync?.value, memberName)) return null;
  return quorum ? 'quorum_standby' : 'sync_standby';
}

function memberRole(
  name: string,
  leaderName: string | null,
  cluster: ClusterView,
  config: DynamicConfig,
): ClusterMemberRole {
  if (name === leaderName) return isStandbyCluster(config) ? 'standby_leader' : 'leader';
  return synchronousRoleOf(cluster, name) ?? 'replica';
}

function memberObject(member: Member, role: ClusterMemberRole, leaderPosition: number): Record<string, unknown> {
  const data = member.data;
  // A leader reports its own state; a replica's replication state (`streaming`) says more.
  const replicationState = role === 'leader' ? '' : stringOr(data.replication_state, '');
  const object: Record<string, unknown> = {
    name: member.name,
    role,
    state: replicationState || stringOr(data.state, ''),
    api_url: data.api_url,
  };
  const { host, port } = connectionAddress(data);
  if (host) {
    object.host = host;
    if (port) object.port = port;
  }
  for (const field of OPTIONAL_MEMBER_FIELDS) {
    if (data[field] !== undefined) object[field] = data[field];
  }
  if (role !== 'leader' && role !== 'standby_leader') {
    for (const { field, lsn, lag } of POSITIONS) {
      const position = integerOrNull(data[field]);
      if (!position) {
        object[lsn] = 'unknown';
        object[lag] = 'unknown';
      } else {
        object[lag] = Math.max(leaderPosition - position, 0);
        object[lsn] = formatLsn(position);
      }
    }
  }
  return object;
}

/** Host and port from `conn_kwargs` or `conn_url` (`postgres://host:port/postgres`; port 5432 when absent). */
function connectionAddress(data: MemberData): { host?: string; port?: number } {
  const kwargs = data.conn_kwargs;
  if (kwargs && typeof kwargs === 'object') {
    const { host, port } = kwargs as { host?: unknown; port?: unknown };
    return { host: typeof host === 'string' ? host : undefined, port: integerOrNull(port) ?? undefined };
  }
  if (typeof data.conn_url !== 'string' || data.conn_url === '') return {};
  let url: URL;
  try {
    url = new URL(data.conn_url);
  } catch {
    return {};
  }
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return { host: host || undefined, port: url.port ? Number(url.port) : 5432 };
}

/** Patroni's standby-cluster test: a `standby_cluster` section with a host, port or restore_command. */
function isStandbyCluster(config: DynamicConfig): boolean {
  const standby = config.standby_cluster;
  if (!standby || typeof standby !== 'object' || Array.isArray(standby)) return false;
  const { host, port, restore_command } = standby as Record<string, unknown>;
  return Boolean(host || port || restore_command);
}

/** Patroni's `parse_int` for member-key positions: integers, and strings holding one. */
function integerOrNull(value: unknown): number | null {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string' && /^\s*\d+\s*$/.test(value)) return Number(value);
  return null;
}

function stringOr(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value : fallback;
}

/**
 * A stored `scheduled_at` as Python's `datetime.isoformat()` writes it after parsing
 * (`2023-09-24T10:36Z` → `2023-09-24T10:36:00+00:00`); text it cannot read is passed on unchanged.
 */
export function pythonIsoformat(timestamp: string): string {
  const match =
    /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i.exec(
      timestamp.trim(),
    );
  if (!match) return timestamp;
  const [, date, minutes, seconds = '00', fraction, zone] = match;
  const micros = fraction && Number(fraction) !== 0 ? `.${fraction.padEnd(6, '0')}` : '';
  let offset = '';
  if (zone)
    offset =
      zone.toUpperCase() === 'Z'
        ? '+00:00'
        : zone.length === 3
          ? `${zone}:00`
          : zone.replace(/^([+-]\d{2}):?(\d{2})$/, '$1:$2');
  return `${date}T${minutes}:${seconds}${micros}${offset}`;
}
