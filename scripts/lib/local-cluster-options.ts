import type { EtcdHandle, StartEtcdOptions } from './etcd';

/** How LocalCluster (local-cluster.ts) starts a cluster. */
export interface LocalClusterOptions {
  nodes: number;
  /** Where node directories go (created if missing). */
  baseDir: string;
  scope?: string;
  /** DCS namespace (default `/service`). */
  namespace?: string;
  /** First node's API port; the others follow. Default: free ports. */
  apiPort?: number;
  /** First node's PostgreSQL port; the others follow. Default: free ports. */
  pgPort?: number;
  /** Each node's ports, by position (a cluster started again on its kept directories reuses them); wins over apiPort/pgPort. */
  nodePorts?: { api: number; pg: number }[];
  ttl?: number;
  loopWait?: number;
  retryTimeout?: number;
  pgPassword?: string;
  /** Extra keys merged into every node's `bootstrap.dcs`. */
  dcs?: Record<string, unknown>;
  /** Extra keys of every node's `bootstrap` section besides `dcs` (`method` and its section...). */
  bootstrap?: Record<string, unknown>;
  /** `patroni`: the agents speak Patroni's identifiers (`/patroni`, `patroni_*`), for patronictl. */
  compat?: 'stator' | 'patroni';
  /** Each node's name, by node index (from 1); default `node<index>`. Clusters sharing one etcd may want names of their own. */
  nodeName?: (index: number) => string;
  /** Per-node tags, by node index (from 1). */
  tags?: Record<number, Record<string, unknown>>;
  /** Per-node `site`, by node index (from 1); none when absent. */
  sites?: Record<number, string>;
  /** Where agent output goes: a log file per node (default), or also this process's stdout. */
  echo?: boolean;
  /** How the cluster's etcd is started (TLS, extra flags). */
  etcd?: StartEtcdOptions;
  /** An etcd already serving, shared by several clusters (each its own scope): used instead of starting one, and left running by stop(). */
  sharedEtcd?: EtcdHandle;
  /** Extra keys of every node's `etcd3` section (protocol, cacert, cert, key, username, password). */
  etcd3?: Record<string, unknown>;
  /** More keys of each node's `postgresql` section, by node index (from 1), e.g. `callbacks`. */
  postgresql?: (index: number) => Record<string, unknown>;
  /** More keys of every node's `restapi` section (`server_tokens`, `allowlist_include_members`...). */
  restapi?: Record<string, unknown>;
  /**
   * Each node's `watchdog` section, by node index (from 1). Default `mode: off`: a test or demo cluster never
   * arms the machine's real /dev/watchdog (a fence killed by a test would reset the machine).
   */
  watchdog?: (index: number) => Record<string, unknown>;
  /** Each node's WAL directory outside its data directory, by node index (from 1): initdb's and pg_basebackup's `waldir`. */
  walDir?: (index: number) => string;
  /** Sections of every node's file, replacing the defaults (e.g. `log`). */
  sections?: Record<string, unknown>;
  /** Runs once etcd serves and before any agent starts (users, roles, auth). */
  prepareEtcd?: (etcd: EtcdHandle) => Promise<void> | void;
  /** Nodes on hosts of their own (network namespaces) instead of loopback ports; with it, `etcd` is started by the caller. */
  network?: NodeNetwork;
  /** More environment for every agent (NOTIFY_SOCKET, ...), not for etcd. */
  agentEnv?: Record<string, string>;
  /** Environment of one node's agent on top of `agentEnv` (one node's clock under libfaketime, say). */
  agentEnvFor?: (index: number) => Record<string, string>;
  /** Command prefix of every agent on loopback, e.g. `unshare --mount ...` for a resolv.conf of its own. */
  agentPrefix?: string[];
  /** The program that runs the agent instead of this checkout's bin/stator.js, e.g. an installed `/usr/bin/stator`. */
  agentProgram?: string;
}

/** Where each node lives when it is not on loopback: see `NetnsLab`. */
export interface NodeNetwork {
  /** The etcd the agents use (already serving). */
  etcd: EtcdHandle;
  /** etcd client endpoints (host:port) as the agents reach them. */
  etcdHosts: string[];
  /** Command prefix that runs a process on node `index`'s host, e.g. `ip netns exec <ns>`. */
  prefix(index: number): string[];
  /** The address peers reach node `index` at (connect_address). */
  clusterAddress(index: number): string;
  /** The address this process and its clients reach node `index` at. */
  clientAddress(index: number): string;
}
