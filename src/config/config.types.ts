import type { CtlConfig } from './ctl-config';
import type { PermanentSlot, SlotMatcher } from './slots-config';
import type { StandbyCluster } from './standby-cluster-config';
import { LogSettings } from '../common/logger';
import type { EventLogSettings } from './event-log-config';
import type { FenceSettings } from './fence-config';
import type { WatchdogSettings } from './watchdog-config';

/**
 * The local configuration file, in Patroni's schema (only the keys Stator supports).
 * Durations are seconds, as in Patroni.
 */
export interface StatorConfig {
  scope: string;
  /**
   * DCS namespace, default `/service`. Always with a leading slash and no trailing slash; `''` when the file says `/`
   * (keys directly under the root, as Patroni does), so `${namespace}/${scope}/` is always the cluster prefix.
   */
  namespace: string;
  name: string;
  /**
   * The data centre, zone or region this node runs in (Patroni's unreleased `site`): published in the member key,
   * preferred by failover and cloning (docs/sites.md). Read at start only: a reload keeps the running value.
   */
  site?: string;
  /** `stator` (default) or `patroni`: which identifiers the API speaks. */
  compat: 'stator' | 'patroni';
  restapi: RestApiConfig;
  /** patronictl's section: statorctl's settings, and the client certificate this agent shows other members (ctl-config.ts). */
  ctl?: CtlConfig;
  /** `hosts`: `host:port` entries (port defaults to 2379), from `hosts`, `host` or PATRONI_ETCD3_HOSTS. */
  /** etcd: endpoints, TLS (PEM files) and RBAC user, as Patroni's `etcd3` section. `srv` (and `srvSuffix`): the DNS domain whose SRV records name the endpoints, found at start; `hosts` is then the fallback. */
  etcd3: {
    hosts: string[];
    protocol: 'http' | 'https';
    srv?: string;
    srvSuffix?: string;
    cacert?: string;
    cert?: string;
    key?: string;
    keyPassword?: string;
    username?: string;
    password?: string;
  };
  bootstrap: {
    /**
     * Written to `/config` by the node that bootstraps the cluster: the defaults (ttl, loop_wait, retry_timeout,
     * maximum_lag_on_failover, primary_start_timeout unless master_start_timeout is given, postgresql.use_pg_rewind
     * and use_slots) followed by the file's keys as written (validated; other keys kept as-is).
     */
    dcs: DynamicConfig;
    /** Custom bootstrap: `method: <name>` and `<name>: {command, ...}`. Default `initdb`. */
    method: string;
    methods: Record<string, BootstrapMethod>;
    initdb: Array<string | Record<string, string>>;
    /** Run once after a new cluster's bootstrap, with the superuser's connection string appended. */
    post_bootstrap?: string;
    /** Lines added after Stator's default pg_hba.conf lines when no `postgresql.pg_hba` is set (local or `/config`). */
    pg_hba?: string[];
  };
  postgresql: PostgresqlConfig;
  tags: NodeTags;
  /** Where Stator keeps node-local state (event queue, fence socket). Default `<data_dir>.stator`. */
  state_dir: string;
  log: LogSettings;
  fence: FenceSettings;
  /** Stator's own: the event log's share of etcd (retention, quota guard). */
  event_log: EventLogSettings;
  /** Patroni's `watchdog`: the hardware watchdog the leader's fence holds. */
  watchdog: WatchdogSettings;
}

export interface RestApiConfig {
  /** host:port to bind. */
  listen: string;
  /** host:port others use to reach this node. */
  connect_address: string;
  authentication?: { username: string; password: string };
  certfile?: string;
  keyfile?: string;
  cafile?: string;
  verify_client?: 'none' | 'optional' | 'required';
  allowlist?: string[];
  /**
   * Which requests the access checks (allowlist, client certificate, basic auth) cover: `unsafe`
   * (default, as the reference) every method but GET, HEAD and OPTIONS; `admin` also the reads that
   * expose configuration and history. Health checks, the status document and /metrics stay open.
   */
  authentication_scope?: 'unsafe' | 'admin';
  /** Passphrase of an encrypted `keyfile`. */
  keyfile_password?: string;
  /** OpenSSL cipher list the HTTPS server accepts (TLS 1.2 and older; TLS 1.3 suites by name). */
  ciphers?: string;
  /** Also admit, where the allowlist applies, the hosts of the members' `api_url` in the DCS. */
  allowlist_include_members?: boolean;
  /** Headers added to every answer; with HTTPS, `https_extra_headers` are merged over them. */
  http_extra_headers?: Record<string, string>;
  https_extra_headers?: Record<string, string>;
  /** Listen backlog of the API socket (Patroni's default 5). */
  request_queue_size?: number;
  /** What the `Server` header says: `original` (none), `productonly` (`Stator`), `minimal` (`Stator/<version>`). */
  server_tokens?: 'original' | 'productonly' | 'minimal';
}

export interface PostgresqlConfig {
  /** host:port to bind (listen_addresses and port). */
  listen: string;
  connect_address: string;
  data_dir: string;
  bin_dir: string;
  authentication: {
    superuser: PostgresRole;
    replication: PostgresRole;
    /** pg_rewind's login; the superuser when absent. */
    rewind?: PostgresRole;
  };
  /** The agent's own connections to its server go through the unix socket (the first of `unix_socket_directories`). */
  use_unix_socket?: boolean;
  /** Accepted for Patroni files: Stator makes no replication connection to its own server. */
  use_unix_socket_repl?: boolean;
  /** Where the agent writes the password file its PostgreSQL tools read (PGPASSFILE); a temporary file when absent. */
  pgpass?: string;
  /** pg_basebackup options, as Patroni's `basebackup` list (`- checkpoint: fast`, `- verbose`) or mapping. */
  basebackup?: Array<string | Record<string, string>>;
  /** The ways to build a replica, tried in order (default `[basebackup]`); each other name has its section. */
  create_replica_methods?: string[];
  /** `postgresql.<method>` for each custom name in `create_replica_methods`. */
  replica_methods?: Record<string, CustomMethod>;
  parameters: Record<string, string | number | boolean>;
  pg_hba: string[];
  /** pg_ident.conf lines, written by Stator when given (here or in `/config`). */
  pg_ident?: string[];
  /**
   * Where postgresql.conf, postgresql.base.conf, pg_hba.conf and pg_ident.conf live (absolute), e.g.
   * /etc/postgresql/15/main; the data directory when absent. PostgreSQL starts with `config_file` there.
   */
  config_dir?: string;
  /** A file included by postgresql.conf instead of postgresql.base.conf (initdb's file is then left alone). */
  custom_conf?: string;
  /** Recovery settings a replica runs with (restore_command, recovery_min_apply_delay...), written into postgresql.conf. */
  recovery_conf?: Record<string, string | number | boolean>;
  /** OS user that runs PostgreSQL when the agent runs as root. Default `postgres`. */
  os_user: string;
  /** Commands run on PostgreSQL events, called with `<action> <role> <scope>` appended. */
  callbacks?: Partial<Record<CallbackAction, string>>;
  /** Other names for PostgreSQL's programs (`pg_ctl`, `postgres`...): a file in `bin_dir`, or an absolute path. */
  bin_name?: Partial<
    Record<'pg_ctl' | 'initdb' | 'pg_controldata' | 'pg_basebackup' | 'postgres' | 'pg_isready' | 'pg_rewind', string>
  >;
  /** Seconds a start, stop or promote may take (default 60). */
  pg_ctl_timeout?: number;
  /** host:port of a connection pooler or proxy in front of this server, published as the member's `proxy_url`. */
  proxy_address?: string;
  /** Whether a failed pg_rewind removes the data directory and clones again (Stator's default: true). */
  remove_data_directory_on_rewind_failure?: boolean;
  /** Whether a diverged former primary that may not rewind removes its data and clones again (Stator's default: true). */
  remove_data_directory_on_diverged_timelines?: boolean;
}

/** A scalar setting of a method's section, passed to its command as `--key=value`. */
export type MethodOption = string | number | boolean;

/**
 * A user's command in place of a built-in step (a replica method, a bootstrap method), run as the
 * reference runs it: split as a shell would, without a shell, with `--key=value` arguments.
 */
export interface CustomMethod {
  command: string;
  /** Do not pass the standard arguments (`--scope`, `--datadir`...). */
  no_params?: boolean;
  /** The section's other keys, in their order (`no_leader`, `keep_data` and the user's own). */
  options: Record<string, MethodOption>;
}

/** `bootstrap.<method>`: a custom bootstrap and the recovery its first start runs. */
export interface BootstrapMethod extends CustomMethod {
  /** Recovery settings for the first start (with recovery.signal), e.g. `restore_command`, `recovery_target_action`. */
  recovery_conf?: Record<string, MethodOption>;
  /** Keep the recovery.signal / standby.signal the command left (pgBackRest, Barman write their own). */
  keep_existing_recovery_conf?: boolean;
}

/** libpq connection options Patroni passes on from a role's `authentication` section. */
export const LIBPQ_OPTIONS = [
  'sslmode',
  'sslcert',
  'sslkey',
  'sslpassword',
  'sslrootcert',
  'sslcrl',
  'sslcrldir',
  'gssencmode',
  'channel_binding',
] as const;
export type LibpqOptions = Partial<Record<(typeof LIBPQ_OPTIONS)[number], string>>;

/** A PostgreSQL login the agent uses, with the libpq options of its connections (TLS client certificates...). */
export interface PostgresRole {
  username: string;
  password?: string;
  libpq?: LibpqOptions;
}

export const CALLBACK_ACTIONS = ['on_start', 'on_stop', 'on_restart', 'on_reload', 'on_role_change'] as const;
export type CallbackAction = (typeof CALLBACK_ACTIONS)[number];

export interface NodeTags {
  nofailover?: boolean;
  noloadbalance?: boolean;
  clonefrom?: boolean;
  nosync?: boolean;
  /** An integer, possibly written as a string (published as written). */
  failover_priority?: number | string;
  [custom: string]: unknown;
}

/** Dynamic settings after defaults and the reference's clamping, as the HA loop uses them. */
export interface EffectiveDynamicConfig {
  ttl: number;
  loop_wait: number;
  retry_timeout: number;
  maximum_lag_on_failover: number;
  check_timeline: boolean;
  primary_start_timeout: number;
  /**
   * Seconds a primary's stop may take with synchronous replication on before it escalates (0: Stator's own
   * deadline, half the ttl for a demotion). `master_stop_timeout` is its old name.
   */
  primary_stop_timeout: number;
  /** At most this many entries are kept in `/history` (0: all). */
  max_timelines_history: number;
  /** `postgresql.remove_data_directory_on_rewind_failure` of `/config` (the local file's wins). */
  remove_data_directory_on_rewind_failure: boolean;
  /** `postgresql.remove_data_directory_on_diverged_timelines` of `/config` (the local file's wins). */
  remove_data_directory_on_diverged_timelines: boolean;
  pause: boolean;
  use_pg_rewind: boolean;
  use_slots: boolean;
  /** Seconds PostgreSQL may go without answering before it counts as hung (0: never); Stator's own key. */
  postgres_unresponsive_timeout: number;
  /** `off`; `on` (`FIRST n`, the reference's synchronous mode); `quorum` (`ANY n`, quorum commit). */
  synchronous_mode: 'off' | 'on' | 'quorum';
  /** Keep commits waiting rather than drop to asynchronous replication when no standby is eligible. */
  synchronous_mode_strict: boolean;
  synchronous_node_count: number;
  /**
   * How many sites other than the leader's must hold every acknowledged commit (0: no site rule); Stator's own
   * key (docs/sites.md). Needs `site` on the members: a standby without one never counts as another site.
   */
  synchronous_site_count: number;
  /** Bytes a synchronous standby may fall behind before another replaces it; -1: never swapped for lag. */
  maximum_lag_on_syncnode: number;
  /** While the DCS cannot be reached, a leader that reaches every member's API stays primary. */
  failsafe_mode: boolean;
  /** Seconds a leader keeps the slot of a member that left the DCS (and creates it at promotion); 0: dropped at once. */
  member_slots_ttl: number;
  /**
   * Milliseconds a node about to change role waits after its health checks changed, so that a load
   * balancer checking at its interval has moved first: a leader before a switchover demotion, a
   * failover candidate between taking the lock and promoting. Stator's own key.
   */
  load_balancer_drain_ms: number;
  /**
   * Seconds a replica postpones the leader race after the leader key expired while WAL still flows
   * from the primary (its agent frozen, PostgreSQL alive); 0: off (Patroni 4.1's `primary_race_backoff`).
   */
  primary_race_backoff: number;
  parameters: Record<string, string | number | boolean>;
  /** `postgresql.pg_hba` / `pg_ident` lines of `/config` (empty: not set); a node's local file wins where it sets them. */
  pg_hba: string[];
  pg_ident: string[];
  /** `postgresql.recovery_conf` of `/config`: a replica's extra recovery settings (the local file's win). */
  recovery_conf: Record<string, string | number | boolean>;
  /** Permanent replication slots (`slots`): kept on the leader and on every replica, their positions shared. */
  slots: PermanentSlot[];
  /** Slots Stator never drops (`ignore_slots`). */
  ignore_slots: SlotMatcher[];
  /** The remote primary this whole cluster replicates from (`standby_cluster`), or null. */
  standby_cluster: StandbyCluster | null;
}

/** The `/config` document. Unknown keys are kept as they are. */
export interface DynamicConfig {
  ttl?: number;
  loop_wait?: number;
  retry_timeout?: number;
  maximum_lag_on_failover?: number;
  check_timeline?: boolean;
  primary_start_timeout?: number;
  postgres_unresponsive_timeout?: number;
  /** Stator's own: see EffectiveDynamicConfig. */
  load_balancer_drain_ms?: number;
  pause?: boolean;
  postgresql?: {
    use_pg_rewind?: boolean;
    use_slots?: boolean;
    parameters?: Record<string, string | number | boolean>;
    [extra: string]: unknown;
  };
  [extra: string]: unknown;
}
