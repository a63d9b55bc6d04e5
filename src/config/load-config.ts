import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { splitCommandLine } from '../common/command-line';
import { readCtlSection } from './ctl-config';
import { CALLBACK_ACTIONS, LIBPQ_OPTIONS, LibpqOptions, NodeTags, PostgresqlConfig, PostgresRole, RestApiConfig, StatorConfig } from './config.types';
import {
  BOOLEAN_RULE,
  PARAMETER_RULE,
  describeValue,
  isMapping,
  isParameterValue,
  parsePatroniBoolean,
} from './dynamic-config';
import {
  Findings,
  ignoreUnsupported,
  isAbsent,
  Mapping,
  readOneOf,
  readRequiredString,
  readSection,
  readString,
  readStringList,
  splitHostPort,
} from './config-readers';
import { applyEnvironment, VARIABLE_BY_PATH } from './environment';
import { OTHER_DCS_SECTIONS, readDcs } from './etcd-config';
import { readBootstrap } from './bootstrap-config';
import { readConfigurationFiles } from './configuration-files-config';
import { readEventLog } from './event-log-config';
import { readFence } from './fence-config';
import { readWatchdog } from './watchdog-config';
import { readLog } from './log-config';
import { readRestApiOptions, RESTAPI_OPTION_KEYS } from './restapi-options-config';
import { methodSectionNames, readReplicaMethods } from './custom-methods-config';
import { PROGRAM_KEYS, readProgramSettings } from './postgresql-programs-config';

/** The configuration cannot be used. `problems` has one line per problem: `<key path>: <rule>`. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';

  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((problem) => `  ${problem}`).join('\n')}`);
  }
}

export interface LoadedConfig {
  config: StatorConfig;
  /** Unsupported keys, ignored settings and clamped values, one line each, for WARNING lines at startup. */
  warnings: string[];
  /** The file as the environment overrode it, before defaults: what `--validate-config --print` shows. */
  document: Mapping;
}

export const DEFAULT_NAMESPACE = '/service';
export const DEFAULT_BIN_DIR = '/usr/lib/postgresql/15/bin';


const TOP_LEVEL_KEYS = [
  'scope',
  'namespace',
  'name',
  'site',
  'compat',
  'restapi',
  'etcd3',
  'bootstrap',
  'postgresql',
  'tags',
  'state_dir',
  'log',
  'fence',
  'event_log',
  'watchdog',
  'ctl',
];
const BOOLEAN_TAGS = ['nofailover', 'noloadbalance', 'clonefrom', 'nosync'];
/** Hosts that bind every interface: fine for `listen`, useless as an address for other nodes. */
const WILDCARD_HOSTS = new Set(['', '*', '0.0.0.0', '::', '[::]']);

/**
 * Reads the configuration file in Patroni's schema (`path` null: from the environment only), applies the PATRONI_* and
 * STATOR_* environment overrides, fills in defaults and validates everything at once.
 * Unsupported keys only produce warnings, so a Patroni 3.x patroni.yml for etcd3 starts unchanged.
 * @throws ConfigError listing every problem found.
 */
export function loadConfig(path: string | null, env: NodeJS.ProcessEnv): LoadedConfig {
  const findings = new Findings(VARIABLE_BY_PATH);
  const doc = path === null ? {} : readConfigFile(path, findings);
  applyEnvironment(doc, env, findings);
  const document = structuredClone(doc);
  const config = readConfig(doc, findings);
  if (findings.problems.length > 0) throw new ConfigError(findings.problems);
  return { config, warnings: findings.warnings, document };
}

function readConfigFile(path: string, findings: Findings): Mapping {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ConfigError([`${path}: cannot read the configuration file (${reason})`]);
  }
  // YAML 1.1 as in Patroni's PyYAML: `on`/`off`/`yes`/`no` are booleans, and `0700` is octal, not 700.
  const document = parseDocument(text, { version: '1.1' });
  if (document.errors.length > 0) {
    throw new ConfigError(document.errors.map((error) => `${path}: ${error.message.split('\n')[0]}`));
  }
  findings.warnings.push(...document.warnings.map((warning) => `${path}: ${warning.message.split('\n')[0]}`));
  const content: unknown = document.toJS();
  if (content === null || content === undefined) return {};
  if (!isMapping(content)) {
    throw new ConfigError([`${path}: the configuration must be a mapping, got ${describeValue(content)}`]);
  }
  return content;
}

function readConfig(doc: Mapping, findings: Findings): StatorConfig {
  ignoreUnsupported(findings, doc, '', [...TOP_LEVEL_KEYS, ...OTHER_DCS_SECTIONS, 'citus']);
  // Ignoring it would run a Citus coordinator or worker without the metadata Patroni keeps for it.
  if (!isAbsent(doc.citus)) findings.problem('citus', 'Citus clusters are not supported by Stator (it does not register workers with the coordinator); remove the section, or run this cluster with Patroni');
  const scope = readIdentifier(findings, doc, 'scope');
  const namespace = normalizeNamespace(readString(findings, doc, 'namespace', '') ?? DEFAULT_NAMESPACE);
  const name = readIdentifier(findings, doc, 'name');
  const site = readSite(findings, doc);
  const compat = readOneOf(findings, doc, 'compat', '', ['stator', 'patroni'] as const, 'stator');
  const restapi = readRestApi(findings, doc);
  const etcd3 = readDcs(findings, doc);
  const bootstrap = readBootstrap(findings, doc);
  const postgresql = readPostgresql(findings, doc);
  const tags = readTags(findings, doc);
  const stateDir = readString(findings, doc, 'state_dir', '') || `${postgresql.data_dir.replace(/\/+$/, '')}.stator`;
  const log = readLog(findings, doc);
  const fence = readFence(findings, doc);
  const watchdog = readWatchdog(findings, doc);
  const eventLog = readEventLog(findings, doc);
  const ctl = readCtlSection(findings, doc.ctl);
  return {
    scope,
    namespace,
    name,
    ...(site !== undefined ? { site } : {}),
    compat,
    restapi,
    etcd3,
    bootstrap,
    postgresql,
    tags,
    state_dir: stateDir,
    log,
    fence,
    event_log: eventLog,
    watchdog,
    ...(Object.keys(ctl).length > 0 ? { ctl } : {}),
  };
}

/** `scope` and `name` end up in DCS keys (`/<namespace>/<scope>/members/<name>`), so no slashes. */
function readIdentifier(findings: Findings, doc: Mapping, key: 'scope' | 'name'): string {
  const value = readRequiredString(findings, doc, key, '');
  if (value.includes('/')) findings.invalid(key, 'must not contain "/"', value);
  return value;
}

/** `site`: optional, but never empty (Patroni's rule: "Site value can't be empty"); surrounding spaces are dropped. */
function readSite(findings: Findings, doc: Mapping): string | undefined {
  const value = readString(findings, doc, 'site', '');
  if (value === undefined) return undefined;
  if (value.trim() === '') findings.invalid('site', "can't be empty", value);
  return value.trim();
}

/** Leading slash, no trailing slash, no doubled slashes; `/` (the root) becomes ''. */
export function normalizeNamespace(namespace: string): string {
  const inner = namespace.trim().replace(/\/+/g, '/').replace(/^\/|\/$/g, '');
  return inner === '' ? '' : `/${inner}`;
}

/** `host:port` to bind. The host may be empty or `*` (all interfaces), or, for PostgreSQL, a comma-separated list. */
function checkListenAddress(findings: Findings, path: string, value: string, hostList: boolean): void {
  const address = splitHostPort(value);
  const badHost = hostList ? /\s/ : /[\s,]/;
  if (!address || badHost.test(address.host)) findings.invalid(path, 'must be host:port', value);
}

/** The `host:port` other nodes use: explicit, or derived from `listen` (its first host). */
function readConnectAddress(findings: Findings, section: Mapping, path: string, listen: string): string {
  const connectPath = `${path}.connect_address`;
  const explicit = readString(findings, section, 'connect_address', path);
  if (explicit !== undefined) {
    const address = splitHostPort(explicit);
    if (!address || /[\s,]/.test(address.host)) findings.invalid(connectPath, 'must be host:port', explicit);
    else if (WILDCARD_HOSTS.has(address.host)) {
      findings.invalid(connectPath, 'must name a host other nodes can reach, not a wildcard address', explicit);
    }
    return explicit;
  }
  const listenAddress = splitHostPort(listen);
  if (!listenAddress) return ''; // listen is missing or invalid, already reported.
  const host = listenAddress.host.split(',')[0].trim();
  const derived = `${host}:${listenAddress.port}`;
  if (WILDCARD_HOSTS.has(host)) {
    findings.warnings.push(
      `${connectPath} is not set and ${path}.listen binds a wildcard address: other nodes will be told "${derived}"; ` +
        `set ${connectPath}`,
    );
  }
  return derived;
}

// ---- sections ----

function readRestApi(findings: Findings, doc: Mapping): RestApiConfig {
  const path = 'restapi';
  const section = readSection(findings, doc, 'restapi', '');
  ignoreUnsupported(findings, section, path, [
    'listen',
    'connect_address',
    'authentication',
    'certfile',
    'keyfile',
    'cafile',
    'verify_client',
    'allowlist',
    'authentication_scope',
    ...RESTAPI_OPTION_KEYS,
  ]);
  const listen = readRequiredString(findings, section, 'listen', path);
  if (listen) checkListenAddress(findings, 'restapi.listen', listen, false);
  const restapi: RestApiConfig = { listen, connect_address: readConnectAddress(findings, section, path, listen) };

  if (!isAbsent(section.authentication)) {
    const authentication = readSection(findings, section, 'authentication', path);
    const authenticationPath = 'restapi.authentication';
    ignoreUnsupported(findings, authentication, authenticationPath, ['username', 'password']);
    restapi.authentication = {
      username: readRequiredString(findings, authentication, 'username', authenticationPath),
      password: readRequiredString(findings, authentication, 'password', authenticationPath, { secret: true }),
    };
  }
  for (const key of ['certfile', 'keyfile', 'cafile'] as const) {
    const file = readString(findings, section, key, path);
    if (file) restapi[key] = file;
  }
  if (!isAbsent(section.verify_client)) {
    const levels = ['none', 'optional', 'required'] as const;
    restapi.verify_client = readOneOf(findings, section, 'verify_client', path, levels, 'none');
  }
  const allowlist = readStringList(findings, section, 'allowlist', path);
  if (allowlist) restapi.allowlist = allowlist;
  readRestApiOptions(findings, section, path, restapi);
  if (!isAbsent(section.authentication_scope)) {
    restapi.authentication_scope = readOneOf(findings, section, 'authentication_scope', path, ['unsafe', 'admin'] as const, 'unsafe');
    const guarded = restapi.authentication || restapi.allowlist?.length || restapi.allowlist_include_members || (restapi.verify_client && restapi.verify_client !== 'none');
    if (restapi.authentication_scope === 'admin' && !guarded) {
      findings.problem('restapi.authentication_scope', '"admin" requires restapi.authentication, restapi.allowlist, restapi.allowlist_include_members or restapi.verify_client');
    }
  }

  // TLS settings only mean something together; a half-configured TLS must not silently serve plain HTTP.
  for (const key of ['keyfile', 'cafile'] as const) {
    if (restapi[key] && !restapi.certfile) findings.problem(`restapi.${key}`, 'requires restapi.certfile');
  }
  if (restapi.verify_client && restapi.verify_client !== 'none' && !restapi.cafile) {
    findings.problem('restapi.verify_client', `"${restapi.verify_client}" requires restapi.cafile`);
  }
  return restapi;
}

function readPostgresql(findings: Findings, doc: Mapping): PostgresqlConfig {
  const path = 'postgresql';
  const section = readSection(findings, doc, 'postgresql', '');
  ignoreUnsupported(findings, section, path, [
    'listen',
    'connect_address',
    'data_dir',
    'bin_dir',
    'authentication',
    'parameters',
    'pg_hba',
    'pg_ident',
    'config_dir',
    'custom_conf',
    'recovery_conf',
    'os_user',
    'callbacks',
    'use_unix_socket',
    'use_unix_socket_repl',
    'pgpass',
    'basebackup',
    'create_replica_methods',
    ...PROGRAM_KEYS,
    ...replicaMethodSections(section),
  ]);
  const listen = readRequiredString(findings, section, 'listen', path);
  if (listen) checkListenAddress(findings, 'postgresql.listen', listen, true);
  return {
    listen,
    connect_address: readConnectAddress(findings, section, path, listen),
    data_dir: readRequiredString(findings, section, 'data_dir', path),
    bin_dir: readString(findings, section, 'bin_dir', path) || DEFAULT_BIN_DIR,
    authentication: readPostgresUsers(findings, section),
    parameters: readParameters(findings, section),
    pg_hba: readStringList(findings, section, 'pg_hba', path) ?? [],
    ...optional('pg_ident', readStringList(findings, section, 'pg_ident', path) ?? []),
    ...readConfigurationFiles(findings, section),
    os_user: readString(findings, section, 'os_user', path) || 'postgres',
    callbacks: readCallbacks(findings, section),
    ...optional('use_unix_socket', readFlag(findings, section, 'use_unix_socket', path)),
    ...optional('use_unix_socket_repl', readFlag(findings, section, 'use_unix_socket_repl', path)),
    ...optional('pgpass', readString(findings, section, 'pgpass', path)),
    ...optional('basebackup', readOptionList(findings, section, 'basebackup', path)),
    ...readReplicaMethods(findings, section),
    ...readProgramSettings(findings, section),
  };
}

/** The method sections (read by readReplicaMethods, not unsupported keys). */
function replicaMethodSections(section: Mapping): string[] {
  return methodSectionNames(section);
}

/** `{key: value}` when the setting is given (true, non-empty), else nothing: the configuration lists what was set. */
function optional<K extends string, V>(key: K, value: V): Partial<Record<K, V>> {
  const given = Array.isArray(value) ? value.length > 0 : Boolean(value);
  return given ? ({ [key]: value } as Record<K, V>) : {};
}

/** A boolean as Patroni reads it (`on`, `yes`, `true`...); false when absent. */
function readFlag(findings: Findings, section: Mapping, key: string, path: string): boolean {
  const value = section[key];
  if (isAbsent(value)) return false;
  const flag = parsePatroniBoolean(value);
  if (flag === undefined) findings.invalid(`${path}.${key}`, BOOLEAN_RULE, value);
  return flag ?? false;
}

/** `postgresql.callbacks`: a command line per action (split as a shell would, run without one). */
function readCallbacks(findings: Findings, postgresql: Mapping): NonNullable<PostgresqlConfig['callbacks']> {
  const path = 'postgresql.callbacks';
  const section = readSection(findings, postgresql, 'callbacks', 'postgresql');
  ignoreUnsupported(findings, section, path, CALLBACK_ACTIONS);
  const callbacks: NonNullable<PostgresqlConfig['callbacks']> = {};
  for (const action of CALLBACK_ACTIONS) {
    const command = readString(findings, section, action, path);
    if (command === undefined || command.trim() === '') continue;
    if (splitCommandLine(command) === null) findings.invalid(`${path}.${action}`, 'must be a command line with balanced quotes', command);
    else callbacks[action] = command;
  }
  return callbacks;
}

function readPostgresUsers(findings: Findings, postgresql: Mapping): PostgresqlConfig['authentication'] {
  const path = 'postgresql.authentication';
  const section = readSection(findings, postgresql, 'authentication', 'postgresql');
  ignoreUnsupported(findings, section, path, ['superuser', 'replication', 'rewind']);
  return {
    superuser: readPostgresUser(findings, section, 'superuser', 'postgres'),
    replication: readPostgresUser(findings, section, 'replication', 'replicator'),
    ...(isAbsent(section.rewind) ? {} : { rewind: readPostgresUser(findings, section, 'rewind', 'rewind_user') }),
  };
}

function readPostgresUser(findings: Findings, authentication: Mapping, role: 'superuser' | 'replication' | 'rewind', defaultName: string): PostgresRole {
  const path = `postgresql.authentication.${role}`;
  const section = readSection(findings, authentication, role, 'postgresql.authentication');
  ignoreUnsupported(findings, section, path, ['username', 'password', ...LIBPQ_OPTIONS]);
  const username = readString(findings, section, 'username', path) || defaultName;
  const password = readString(findings, section, 'password', path, { secret: true });
  const libpq: LibpqOptions = {};
  for (const option of LIBPQ_OPTIONS) {
    const value = readString(findings, section, option, path, option === 'sslpassword' ? { secret: true } : undefined);
    if (value) libpq[option] = value;
  }
  if (libpq.sslmode && !SSL_MODES.includes(libpq.sslmode)) findings.invalid(`${path}.sslmode`, `must be one of ${SSL_MODES.join(', ')}`, libpq.sslmode);
  return { username, ...(password === undefined ? {} : { password }), ...(Object.keys(libpq).length > 0 ? { libpq } : {}) };
}

const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'];

/** `basebackup`-style options: a list of names and single-key mappings, or one mapping (as Patroni accepts both). */
function readOptionList(findings: Findings, section: Mapping, key: string, path: string): Array<string | Record<string, string>> {
  const value = section[key];
  if (isAbsent(value)) return [];
  const rule = 'must be a list of option names and single-key mappings (name: value), or a mapping';
  const items = isMapping(value) ? Object.entries(value).map(([name, v]) => ({ [name]: v })) : Array.isArray(value) ? value : null;
  if (!items) {
    findings.invalid(`${path}.${key}`, rule, value);
    return [];
  }
  const options: Array<string | Record<string, string>> = [];
  items.forEach((item: unknown, index) => {
    const entries = isMapping(item) ? Object.entries(item) : [];
    if (typeof item === 'string' && /^[a-z][a-z-]*$/.test(item)) options.push(item);
    else if (entries.length === 1 && /^[a-z][a-z-]*$/.test(entries[0][0]) && isParameterValue(entries[0][1])) options.push({ [entries[0][0]]: String(entries[0][1]) });
    else findings.invalid(`${path}.${key}[${index}]`, rule, item);
  });
  return options;
}

function readParameters(findings: Findings, postgresql: Mapping): PostgresqlConfig['parameters'] {
  const section = readSection(findings, postgresql, 'parameters', 'postgresql');
  const parameters: PostgresqlConfig['parameters'] = {};
  for (const [name, value] of Object.entries(section)) {
    if (isParameterValue(value)) parameters[name] = value;
    else findings.invalid(`postgresql.parameters.${name}`, PARAMETER_RULE, value);
  }
  return parameters;
}

function readTags(findings: Findings, doc: Mapping): NodeTags {
  const section = readSection(findings, doc, 'tags', '');
  const tags: NodeTags = {};
  for (const [key, value] of Object.entries(section)) {
    const path = `tags.${key}`;
    if (BOOLEAN_TAGS.includes(key)) {
      if (isAbsent(value)) continue;
      const flag = parsePatroniBoolean(value);
      if (flag === undefined) findings.invalid(path, BOOLEAN_RULE, value);
      else tags[key] = flag;
    } else if (key === 'failover_priority') {
      // YAML and environment values may be strings ("1"): the reference reads them as integers and publishes them as written.
      const priority = typeof value === 'string' && /^\s*\d{1,9}\s*$/.test(value) ? Number(value) : value;
      if (Number.isInteger(priority) && (priority as number) >= 0) tags.failover_priority = value as number | string;
      else findings.invalid(path, 'must be an integer >= 0', value);
    } else {
      tags[key] = value;
    }
  }
  return tags;
}
