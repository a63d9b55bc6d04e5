import type { LocalClusterOptions } from './local-cluster-options';

/** What a node's configuration file is written from (LocalNode). */
export interface ConfiguredNode {
  index: number;
  scope: string;
  name: string;
  dir: string;
  dataDir: string;
  stateDir: string;
  etcdEndpoint: string;
  apiPort: number;
  pgPort: number;
}

/** The node's stator.yml: the cluster's options over the defaults every local cluster runs with. */
export function nodeConfig(node: ConfiguredNode, o: LocalClusterOptions): Record<string, unknown> {
  const listenHost = o.network ? '0.0.0.0' : '127.0.0.1';
  const connectHost = o.network?.clusterAddress(node.index) ?? '127.0.0.1';
  const waldir = o.walDir ? [{ waldir: o.walDir(node.index) }] : [];
  const initdb = [...(added.initdb ?? []), ...waldir];
  const basebackup = [...(added.basebackup ?? []), ...waldir];
  return {
    scope: node.scope,
    namespace: o.namespace ?? '/service',
    name: node.name,
    restapi: {
      listen: `${listenHost}:${node.apiPort}`,
      connect_address: `${connectHost}:${node.apiPort}`,
      ...o.restapi,
    },
    etcd3: { hosts: o.network?.etcdHosts ?? [node.etcdEndpoint], ...o.etcd3 },
    bootstrap: {
      dcs: {
        ttl: o.ttl ?? 10,
        loop_wait: o.loopWait ?? 2,
        retry_timeout: o.retryTimeout ?? 4,
        maximum_lag_on_failover: 1048576,
        ...o.dcs,
        postgresql: withDefaultPostgresql(o.dcs?.postgresql),
      },
      ...(initdb.length > 0 && { initdb }),
      ...o.bootstrap,
    },
    postgresql: {
      listen: `${listenHost}:${node.pgPort}`,
      connect_address: `${connectHost}:${node.pgPort}`,
      data_dir: node.dataDir,
      authentication: {
        superuser: { username: 'postgres', password: o.pgPassword ?? 'postgres' },
        replication: { username: 'replicator', password: 'replicator-secret' },
      },
      parameters: { unix_socket_directories: node.dir },
      ...(basebackup.length > 0 && { basebackup }),
      ...o.postgresql?.(node.index),
    },
    tags: o.tags?.[node.index] ?? {},
    ...(o.sites?.[node.index] ? { site: o.sites[node.index] } : {}),
    compat: o.compat ?? 'stator',
    state_dir: node.stateDir,
    watchdog: o.watchdog?.(node.index) ?? { mode: 'off' },
    ...o.sections,
  };
}

/**
 * What the process starting clusters adds beneath each caller's own settings: the test suite turns off every wait
 * for the disk (test/helpers/cluster-defaults.ts); the demo, bench and chaos runs add nothing.
 */
export interface AddedClusterDefaults {
  /** PostgreSQL parameters (`bootstrap.dcs.postgresql.parameters`), e.g. `fsync: off`. */
  parameters?: Record<string, unknown>;
  /** `bootstrap.initdb` options, e.g. `no-sync`. */
  initdb?: Array<string | Record<string, string>>;
  /** `postgresql.basebackup` options, e.g. `no-sync`. */
  basebackup?: Array<string | Record<string, string>>;
}

const added: AddedClusterDefaults = {};

/** Applies to every cluster this process starts from now on. */
export function addClusterDefaults(defaults: AddedClusterDefaults): void {
  Object.assign(added, defaults);
}

/** `bootstrap.dcs.postgresql`: a caller's keys and parameters merged over the small defaults every test cluster runs with. */
function withDefaultPostgresql(given: unknown): Record<string, unknown> {
  const extra = (given ?? {}) as Record<string, unknown>;
  const parameters = {
    max_connections: 50,
    shared_buffers: '32MB',
    ...added.parameters,
    ...(extra.parameters as Record<string, unknown> | undefined),
  };
  return { use_pg_rewind: true, use_slots: true, ...extra, parameters };
}
