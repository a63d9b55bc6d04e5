import { ReplicationConnection } from '../postgres.port';
import { parseStandbyNames, StandbyNames } from '../standby-names';

/** What pg_stat_replication shows of a standby streaming from a server. */
export interface StreamingStandby {
  name: string;
  host: string;
  replicationUser: string;
  walPosition?: number | null;
}

/**
 * pg_stat_replication of a server whose downstreams are `replicas`. Replication settles at once
 * here, so every standby reports its own end of WAL as written and flushed.
 */
export function replicationRows(replicas: StreamingStandby[], standbyNames: string): ReplicationConnection[] {
  const connections = replicas
    .map((replica) => {
      const position = replica.walPosition ?? null;
      return {
        usename: replica.replicationUser,
        application_name: replica.name,
        client_addr: replica.host,
        state: 'streaming',
        sync_state: 'async',
        sync_priority: 0,
        write_lsn: position,
        flush_lsn: position,
        replay_lsn: position,
      };
    })
    .sort((a, b) => (a.application_name < b.application_name ? -1 : 1));
  return withSyncStates(connections, standbyNames);
}

/**
 * `sync_state` of each connection as PostgreSQL derives it from synchronous_standby_names: in
 * priority mode the first `count` connected standbys in list order are `sync`, the other listed ones
 * `potential`; in quorum mode every listed one is `quorum`; `*` matches any standby.
 */
export function withSyncStates(connections: ReplicationConnection[], standbyNames: string): ReplicationConnection[] {
  let parsed: StandbyNames;
  try {
    parsed = parseStandbyNames(standbyNames);
  } catch {
    return connections;
  }
  const priorityOf = (name: string): number => {
    const index = parsed.members.findIndex((member) => member === '*' || member.toLowerCase() === name.toLowerCase());
    return index < 0 ? 0 : index + 1;
  };
  const bySyncPriority = connections
    .filter((c) => priorityOf(c.application_name) > 0)
    .sort((a, b) => priorityOf(a.application_name) - priorityOf(b.application_name));
  const synchronous = new Set(
    parsed.kind === 'priority' ? bySyncPriority.slice(0, parsed.count).map((c) => c.application_name) : [],
  );
  return connections.map((connection) => {
    const priority = priorityOf(connection.application_name);
    if (priority === 0) return connection;
    const state =
      parsed.kind === 'quorum' ? 'quorum' : synchronous.has(connection.application_name) ? 'sync' : 'potential';
    return { ...connection, sync_state: state, sync_priority: parsed.kind === 'quorum' ? 1 : priority };
  });
}
