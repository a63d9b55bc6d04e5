import { accessSync, constants as fsConstants, readFileSync } from 'node:fs';
import { parse, parseDocument } from 'yaml';
import { DynamicConfig } from '../dcs/dcs.port';
import { NodeTags, PostgresqlConfig, RestApiConfig, StatorConfig } from './config.types';
import {
  BOOLEAN_RULE,
  DYNAMIC_CONFIG_DEFAULTS,
  PARAMETER_RULE,
  describeValue,
  effectiveDynamicConfig,
  isMapping,
  isParameterValue,
  parsePatroniBoolean,
  validateDynamicConfigKeys,
} from './dynamic-config';

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
}

export const DEFAULT_NAMESPACE = '/service';
export const DEFAULT_BIN_DIR = '/usr/lib/postgresql/15/bin';
const DEFAULT_ETCD_PORT = 2379;

type Mapping = Record<string, unknown>;

/** Each setting can be given as PATRONI_<name> or STATOR_<name>; the later prefix wins, and both win over the file. */
const ENVIRONMENT_PREFIXES = ['PATRONI_', 'STATOR_'] as const;

/** Patroni's environment variable names ("Environment Configuration Settings") for the keys Stator supports. */
const ENVIRONMENT_SETTINGS: ReadonlyArray<{ name: string; path: string; list?: true }> = [
  { name: 'SCOPE', path: 'scope' },
  { name: 'NAMESPACE', path: 'namespace' },
  { name: 'NAME', path: 'name' },
  { name: 'RESTAPI_LISTEN', path: 'restapi.listen' },
  { name: 'RESTAPI_CONNECT_ADDRESS', path: 'restapi.connect_address' },
  { name: 'RESTAPI_USERNAME', path: 'restapi.authentication.username' },
  { name: 'RESTAPI_PASSWORD', path: 'restapi.authentication.password' },
  { name: 'RESTAPI_CERTFILE', path: 'restapi.certfile' },
  { name: 'RESTAPI_KEYFILE', path: 'restapi.keyfile' },
  { name: 'RESTAPI_CAFILE', path: 'restapi.cafile' },
  { name: 'RESTAPI_VERIFY_CLIENT', path: 'restapi.verify_client' },
  { name: 'RESTAPI_ALLOWLIST', path: 'restapi.allowlist', list: true },
  { name: 'RESTAPI_AUTHENTICATION_SCOPE', path: 'restapi.authentication_scope' },
  // HOST before HOSTS: when a prefix sets both, HOSTS is applied last and wins, as `hosts` wins over `host` in Patroni.
  { name: 'ETCD3_HOST', path: 'etcd3.host' },
  { name: 'ETCD3_HOSTS', path: 'etcd3.hosts', list: true },
  { name: 'ETCD3_PROTOCOL', path: 'etcd3.protocol' },
  { name: 'ETCD3_USERNAME', path: 'etcd3.username' },
  { name: 'ETCD3_PASSWORD', path: 'etcd3.password' },
  { name: 'ETCD3_CACERT', path: 'etcd3.cacert' },
  { name: 'ETCD3_CERT', path: 'etcd3.cert' },
  { name: 'ETCD3_KEY', path: 'etcd3.key' },
  { name: 'POSTGRESQL_LISTEN', path: 'postgresql.listen' },
  { name: 'POSTGRESQL_CONNECT_ADDRESS', path: 'postgresql.connect_address' },
  { name: 'POSTGRESQL_DATA_DIR', path: 'postgresql.data_dir' },
  { name: 'POSTGRESQL_BIN_DIR', path: 'postgresql.bin_dir' },
  { name: 'SUPERUSER_USERNAME', path: 'postgresql.authentication.superuser.username' },
  { name: 'SUPERUSER_PASSWORD', path: 'postgresql.authentication.superuser.password' },
  { name: 'REPLICATION_USERNAME', path: 'postgresql.authentication.replication.username' },
  { name: 'REPLICATION_PASSWORD', path: 'postgresql.authentication.replication.password' },
  { name: 'LOG_LEVEL', path: 'log.level' },
];

/** Key path -> the PATRONI_ variable that can set it, for "required (or ...)" hints. */
const VARIABLE_BY_PATH = new Map(ENVIRONMENT_SETTINGS.map((setting) => [setting.path, `PATRONI_${setting.name}`]));

/** Patroni's etcd v2 variables: recognised only to say that etcd3 is needed instead. */
const ETCD_V2_VARIABLE = /^(?:PATRONI|STATOR)_ETCD_(HOSTS?|URL|PROXY|SRV)$/;

const TOP_LEVEL_KEYS = [
  'scope',
  'namespace',
  'name',
  'compat',
  'restapi',
  'etcd3',
  'bootstrap',
  'postgresql',
  'tags',
  'state_dir',
  'log',
];
/** Patroni's other DCS sections: fatal when they replace etcd3, ignored with a warning next to it. */
const OTHER_DCS_SECTIONS = ['etcd', 'consul', 'zookeeper', 'exhibitor', 'kubernetes', 'raft'];

const BOOLEAN_TAGS = ['nofailover', 'noloadbalance', 'clonefrom', 'nosync'];
/** Patroni tags Stator publishes like custom tags but does not act on. */
const TAGS_WITHOUT_EFFECT = ['replicatefrom', 'nostream'];

/** Hosts that bind every interface: fine for `listen`, useless as an address for other nodes. */
const WILDCARD_HOSTS = new Set(['', '*', '0.0.0.0', '::', '[::]']);

const LOG_LEVELS: Record<string, StatorConfig['log']['level']> = {
  debug: 'debug',
  info: 'info',
  warning: 'warning',
  warn: 'warning',
  error: 'error',
  critical: 'error',
};

/**
 * Reads the configuration file in Patroni's schema (`path` null: from the environment only), applies the PATRONI_* and
 * STATOR_* environment overrides, fills in defaults and validates everything at once.
 * Unsupported keys only produce warnings, so a Patroni 3.x patroni.yml for etcd3 starts unchanged.
 * @throws ConfigError listing every problem found.
 */
export function loadConfig(path: string | null, env: NodeJS.ProcessEnv): LoadedConfig {
  const findings = new Findings();
  const doc = path === null ? {} : readConfigFile(path, findings);
  applyEnvironment(doc, env, findings);
  const config = readConfig(doc, findings);
  if (findings.problems.length > 0) throw new ConfigError(findings.problems);
  return { config, warnings: findings.warnings };
}

class Findings {
  readonly problems: string[] = [];
  readonly warnings: string[] = [];
  /** Key path -> the environment variable whose value is there, so that messages point at the right place. */
  readonly setBy = new Map<string, string>();

  problem(path: string, message: string): void {
    const variable = this.setBy.get(path.replace(/\[\d+\]$/, ''));
    this.problems.push(`${path}: ${message}${variable ? ` (from ${variable})` : ''}`);
  }

  invalid(path: string, rule: string, value: unknown, options: { secret?: boolean } = {}): void {
    this.problem(path, options.secret ? rule : `${rule}, got ${describeValue(value)}`);
  }

  required(path: string): void {
    const variable = VARIABLE_BY_PATH.get(path);
    this.problems.push(`${path}: required${variable ? ` (or ${variable})` : ''}`);
  }

  unsupported(path: string, reason?: string): void {
    this.warnings.push(`unsupported key ${path} ignored${reason ? ` (${reason})` : ''}`);
  }
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

function applyEnvironment(doc: Mapping, env: NodeJS.ProcessEnv, findings: Findings): void {
  const known = new Set<string>();
  for (const prefix of ENVIRONMENT_PREFIXES) {
    for (const setting of ENVIRONMENT_SETTINGS) {
      const variable = prefix + setting.name;
      known.add(variable);
      const raw = env[variable];
      if (!raw) continue; // Patroni ignores empty variables too.
      const value = setting.list ? parseListVariable(raw) : raw;
      if (value === undefined) {
        const rule = `${variable} must be a list ("a,b" or "['a','b']")`;
        findings.problems.push(`${setting.path}: ${rule}, got ${describeValue(raw)}`);
        continue;
      }
      if (setting.path.startsWith('etcd3.host') && isMapping(doc.etcd3)) {
        // `host` and `hosts` name the same endpoints: the environment replaces both.
        delete doc.etcd3.host;
        delete doc.etcd3.hosts;
      }
      setPath(doc, setting.path, value);
      findings.setBy.set(setting.path, variable);
    }
  }
  for (const [variable, raw] of Object.entries(env)) {
    const etcdV2 = ETCD_V2_VARIABLE.exec(variable);
    if (etcdV2 && raw) {
      setPath(doc, `etcd.${etcdV2[1].toLowerCase()}`, raw);
      findings.setBy.set('etcd', variable);
    } else if (variable.startsWith('PATRONI_') && !known.has(variable) && !etcdV2) {
      findings.warnings.push(`unsupported environment variable ${variable} ignored`);
    }
  }
}

/** Patroni's list syntax: "['a','b']" or "- a" forms are YAML; anything else is wrapped in brackets ("a,b"). */
function parseListVariable(raw: string): string[] | undefined {
  const text = raw.trim();
  const yamlText = text.startsWith('-') || text.includes('[') ? text : `[${text}]`;
  let parsed: unknown;
  try {
    parsed = parse(yamlText, { version: '1.1' });
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || !parsed.every((item) => typeof item === 'string' || typeof item === 'number')) {
    return undefined;
  }
  return parsed.map(String);
}

function setPath(doc: Mapping, path: string, value: unknown): void {
  const keys = path.split('.');
  let section = doc;
  for (const key of keys.slice(0, -1)) {
    if (!isMapping(section[key])) section[key] = {};
    section = section[key] as Mapping;
  }
  section[keys[keys.length - 1]] = value;
}

function readConfig(doc: Mapping, findings: Findings): StatorConfig {
  ignoreUnsupported(findings, doc, '', [...TOP_LEVEL_KEYS, ...OTHER_DCS_SECTIONS]);
  const scope = readIdentifier(findings, doc, 'scope');
  const namespace = normalizeNamespace(readString(findings, doc, 'namespace', '') ?? DEFAULT_NAMESPACE);
  const name = readIdentifier(findings, doc, 'name');
  const compat = readOneOf(findings, doc, 'compat', '', ['stator', 'patroni'] as const, 'stator');
  const restapi = readRestApi(findings, doc);
  const etcd3 = readDcs(findings, doc);
  const bootstrap = readBootstrap(findings, doc);
  const postgresql = readPostgresql(findings, doc);
  const tags = readTags(findings, doc);
  const stateDir = readString(findings, doc, 'state_dir', '') || `${postgresql.data_dir.replace(/\/+$/, '')}.stator`;
  const log = { level: readLogLevel(findings, doc) };
  return { scope, namespace, name, compat, restapi, etcd3, bootstrap, postgresql, tags, state_dir: stateDir, log };
}

// ---- generic readers: each reports its own problems and returns a usable fallback ----

function childPath(parent: string, key: string): string {
  return parent ? `${parent}.${key}` : key;
}

function isAbsent(value: unknown): value is undefined | null {
  return value === undefined || value === null;
}

function readSection(findings: Findings, parent: Mapping, key: string, parentPath: string): Mapping {
  const value = parent[key];
  if (isAbsent(value)) return {};
  if (isMapping(value)) return value;
  findings.invalid(childPath(parentPath, key), 'must be a mapping', value);
  return {};
}

function ignoreUnsupported(findings: Findings, section: Mapping, path: string, supported: readonly string[]): void {
  for (const key of Object.keys(section)) {
    if (!supported.includes(key)) findings.unsupported(childPath(path, key));
  }
}

function readString(
  findings: Findings,
  section: Mapping,
  key: string,
  path: string,
  options: { secret?: boolean } = {},
): string | undefined {
  const value = section[key];
  if (isAbsent(value)) return undefined;
  if (typeof value === 'string') return value;
  // YAML reads `password: 1234` or `scope: 2024` as numbers; Patroni uses them as text.
  if (typeof value === 'number') return String(value);
  findings.invalid(childPath(path, key), 'must be a string', value, options);
  return undefined;
}

function readRequiredString(
  findings: Findings,
  section: Mapping,
  key: string,
  path: string,
  options: { secret?: boolean } = {},
): string {
  const value = section[key];
  if (isAbsent(value) || value === '') {
    findings.required(childPath(path, key));
    return '';
  }
  return readString(findings, section, key, path, options) ?? '';
}

function readOneOf<T extends string>(
  findings: Findings,
  section: Mapping,
  key: string,
  path: string,
  allowed: readonly T[],
  fallback: T,
): T {
  const value = readString(findings, section, key, path);
  if (value === undefined) return fallback;
  const normalized = value.trim().toLowerCase();
  if ((allowed as readonly string[]).includes(normalized)) return normalized as T;
  findings.invalid(childPath(path, key), `must be one of ${allowed.join(', ')}`, value);
  return fallback;
}

function readStringList(findings: Findings, section: Mapping, key: string, path: string): string[] | undefined {
  const value = section[key];
  const listPath = childPath(path, key);
  if (isAbsent(value)) return undefined;
  if (!Array.isArray(value)) {
    findings.invalid(listPath, 'must be a list of strings', value);
    return undefined;
  }
  const items: string[] = [];
  value.forEach((item, index) => {
    if (typeof item === 'string' || typeof item === 'number') items.push(String(item));
    else findings.invalid(`${listPath}[${index}]`, 'must be a string', item);
  });
  return items;
}

/** `scope` and `name` end up in DCS keys (`/<namespace>/<scope>/members/<name>`), so no slashes. */
function readIdentifier(findings: Findings, doc: Mapping, key: 'scope' | 'name'): string {
  const value = readRequiredString(findings, doc, key, '');
  if (value.includes('/')) findings.invalid(key, 'must not contain "/"', value);
  return value;
}

/** Leading slash, no trailing slash, no doubled slashes; `/` (the root) becomes ''. */
function normalizeNamespace(namespace: string): string {
  const inner = namespace.trim().replace(/\/+/g, '/').replace(/^\/|\/$/g, '');
  return inner === '' ? '' : `/${inner}`;
}

function splitHostPort(value: string): { host: string; port: number } | undefined {
  const match = /^(.*):(\d{1,5})$/.exec(value.trim());
  if (!match) return undefined;
  const port = Number(match[2]);
  return port >= 1 && port <= 65535 ? { host: match[1], port } : undefined;
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
  if (!isAbsent(section.authentication_scope)) {
    restapi.authentication_scope = readOneOf(findings, section, 'authentication_scope', path, ['unsafe', 'admin'] as const, 'unsafe');
    const guarded = restapi.authentication || restapi.allowlist?.length || (restapi.verify_client && restapi.verify_client !== 'none');
    if (restapi.authentication_scope === 'admin' && !guarded) {
      findings.problem('restapi.authentication_scope', '"admin" requires restapi.authentication, restapi.allowlist or restapi.verify_client');
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

function readDcs(findings: Findings, doc: Mapping): StatorConfig['etcd3'] {
  const otherDcs = OTHER_DCS_SECTIONS.filter((key) => !isAbsent(doc[key]));
  if (isAbsent(doc.etcd3) && otherDcs.length > 0) {
    for (const key of otherDcs) {
      const advice = key === 'etcd' ? '; etcd v2 is not: rename the section to etcd3 (same hosts, v3 API)' : '';
      findings.problem(key, `only etcd3 is supported as DCS${advice}`);
    }
    return { hosts: [], protocol: 'http' };
  }
  otherDcs.forEach((key) => findings.unsupported(key, 'only etcd3 is supported as DCS'));
  return readEtcd3(findings, doc);
}

function readEtcd3(findings: Findings, doc: Mapping): StatorConfig['etcd3'] {
  const path = 'etcd3';
  const section = readSection(findings, doc, 'etcd3', '');
  ignoreUnsupported(findings, section, path, ['hosts', 'host', 'protocol', 'username', 'password', 'cacert', 'cert', 'key']);
  const etcd3: StatorConfig['etcd3'] = {
    hosts: readEtcdHosts(findings, section),
    protocol: readOneOf(findings, section, 'protocol', path, ['http', 'https'] as const, 'http'),
  };
  for (const key of ['cacert', 'cert', 'key'] as const) {
    const file = readString(findings, section, key, path);
    if (!file) continue;
    if (etcd3.protocol !== 'https') findings.problem(`etcd3.${key}`, 'requires etcd3.protocol: https');
    else if (!isReadableFile(file)) findings.problem(`etcd3.${key}`, `cannot read ${file}`);
    etcd3[key] = file;
  }
  if (etcd3.key && !etcd3.cert) findings.problem('etcd3.key', 'requires etcd3.cert');
  const username = readString(findings, section, 'username', path);
  const password = readString(findings, section, 'password', path, { secret: true });
  if (username !== undefined && password === undefined) findings.required('etcd3.password');
  if (password !== undefined && username === undefined) findings.required('etcd3.username');
  if (username !== undefined && password !== undefined) Object.assign(etcd3, { username, password });
  return etcd3;
}

/** A file this process can read now (certificates are read when the agent connects). */
function isReadableFile(path: string): boolean {
  try {
    accessSync(path, fsConstants.R_OK);
    return true;
  } catch {
    return false;
  }
}

/** `hosts` (a list, or a comma-separated string) wins over `host`, as in Patroni; the port defaults to 2379. */
function readEtcdHosts(findings: Findings, section: Mapping): string[] {
  const key = isAbsent(section.hosts) ? 'host' : 'hosts';
  const path = `etcd3.${key}`;
  const value = section[key];
  let entries: unknown[];
  if (typeof value === 'string') entries = value.split(',').map((entry) => entry.trim()).filter(Boolean);
  else if (Array.isArray(value)) entries = value;
  else if (isAbsent(value)) entries = [];
  else {
    findings.invalid(path, 'must be a list of host:port or a comma-separated string', value);
    return [];
  }
  if (entries.length === 0) {
    findings.required('etcd3.hosts');
    return [];
  }
  const hosts: string[] = [];
  entries.forEach((entry, index) => {
    const host = typeof entry === 'string' ? normalizeEtcdHost(entry) : undefined;
    if (host) hosts.push(host);
    else {
      const entryPath = Array.isArray(value) ? `${path}[${index}]` : path;
      findings.invalid(entryPath, 'must be host:port without a scheme (use etcd3.protocol for https)', entry);
    }
  });
  return hosts;
}

/** `host[:port]` to `host:port`; IPv6 addresses need brackets (`[::1]:2379`). */
function normalizeEtcdHost(entry: string): string | undefined {
  const text = entry.trim();
  const address = splitHostPort(/:\d+$/.test(text) ? text : `${text}:${DEFAULT_ETCD_PORT}`);
  const hostPattern = /^(?:[A-Za-z0-9._-]+|\[[0-9a-fA-F:.]+\])$/;
  return address && hostPattern.test(address.host) ? `${address.host}:${address.port}` : undefined;
}

function readBootstrap(findings: Findings, doc: Mapping): StatorConfig['bootstrap'] {
  const path = 'bootstrap';
  const section = readSection(findings, doc, 'bootstrap', '');
  const dcs = readBootstrapDcs(findings, section);
  const method = readString(findings, section, 'method', path) || 'initdb';
  const methods: Record<string, { command: string }> = {};
  for (const [key, value] of Object.entries(section)) {
    if (['dcs', 'method', 'initdb'].includes(key)) continue;
    // Any other mapping with a `command` is a custom bootstrap method, as in Patroni.
    if (key === method || (isMapping(value) && 'command' in value)) {
      methods[key] = readCustomMethod(findings, section, key);
    } else findings.unsupported(`bootstrap.${key}`);
  }
  if (method !== 'initdb' && !(method in methods)) {
    findings.problems.push(`bootstrap.${method}.command: required because bootstrap.method is "${method}"`);
  }
  return { dcs, method, methods, initdb: readInitdbOptions(findings, section) };
}

function readBootstrapDcs(findings: Findings, bootstrap: Mapping): DynamicConfig {
  const section = readSection(findings, bootstrap, 'dcs', 'bootstrap');
  const problems = validateDynamicConfigKeys(section);
  findings.problems.push(...problems.map((problem) => `bootstrap.dcs.${problem}`));
  const dcs = withDynamicDefaults(section);
  if (problems.length === 0) {
    // Patroni clamps a bootstrap section that breaks loop_wait + 2*retry_timeout <= ttl; so do we, but say so.
    findings.warnings.push(...effectiveDynamicConfig(null, dcs).adjustments.map((line) => `bootstrap.dcs: ${line}`));
  }
  return dcs;
}

/** The defaults first (they lead the /config written at bootstrap, as in Patroni), then the file's keys as written. */
function withDynamicDefaults(section: Mapping): DynamicConfig {
  const defaults = DYNAMIC_CONFIG_DEFAULTS;
  const given = withoutNulls(section);
  const postgresql = isMapping(given.postgresql) ? withoutNulls(given.postgresql) : {};
  const startTimeoutGiven = 'primary_start_timeout' in given || 'master_start_timeout' in given;
  return {
    ttl: defaults.ttl,
    loop_wait: defaults.loop_wait,
    retry_timeout: defaults.retry_timeout,
    maximum_lag_on_failover: defaults.maximum_lag_on_failover,
    ...(startTimeoutGiven ? {} : { primary_start_timeout: defaults.primary_start_timeout }),
    ...given,
    postgresql: { use_pg_rewind: defaults.use_pg_rewind, use_slots: defaults.use_slots, ...postgresql },
  };
}

/** An empty YAML value (`ttl:`) means "not set", not "null". */
function withoutNulls(section: Mapping): Mapping {
  return Object.fromEntries(Object.entries(section).filter(([, value]) => value !== null));
}

function readCustomMethod(findings: Findings, bootstrap: Mapping, name: string): { command: string } {
  const path = `bootstrap.${name}`;
  const section = readSection(findings, bootstrap, name, 'bootstrap');
  ignoreUnsupported(findings, section, path, ['command']);
  return { command: readRequiredString(findings, section, 'command', path) };
}

function readInitdbOptions(findings: Findings, bootstrap: Mapping): StatorConfig['bootstrap']['initdb'] {
  const path = 'bootstrap.initdb';
  const value = bootstrap.initdb;
  if (isAbsent(value)) return [];
  const rule = 'must be an option name or a single-key mapping (name: value)';
  if (!Array.isArray(value)) {
    findings.invalid(path, `must be a list; each item ${rule}`, value);
    return [];
  }
  const options: StatorConfig['bootstrap']['initdb'] = [];
  value.forEach((item, index) => {
    const entries = isMapping(item) ? Object.entries(item) : [];
    if (typeof item === 'string' && item.trim() !== '') options.push(item);
    else if (entries.length === 1 && isParameterValue(entries[0][1])) {
      const [[option, value]] = entries;
      options.push({ [option]: String(value) });
    } else findings.invalid(`${path}[${index}]`, rule, item);
  });
  return options;
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
    'os_user',
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
    os_user: readString(findings, section, 'os_user', path) || 'postgres',
  };
}

function readPostgresUsers(findings: Findings, postgresql: Mapping): PostgresqlConfig['authentication'] {
  const path = 'postgresql.authentication';
  const section = readSection(findings, postgresql, 'authentication', 'postgresql');
  for (const key of Object.keys(section)) {
    if (key === 'rewind') findings.unsupported(`${path}.rewind`, 'pg_rewind connects as the superuser');
    else if (key !== 'superuser' && key !== 'replication') findings.unsupported(`${path}.${key}`);
  }
  return {
    superuser: readPostgresUser(findings, section, 'superuser', 'postgres'),
    replication: readPostgresUser(findings, section, 'replication', 'replicator'),
  };
}

function readPostgresUser(
  findings: Findings,
  authentication: Mapping,
  role: 'superuser' | 'replication',
  defaultName: string,
): { username: string; password?: string } {
  const path = `postgresql.authentication.${role}`;
  const section = readSection(findings, authentication, role, 'postgresql.authentication');
  ignoreUnsupported(findings, section, path, ['username', 'password']);
  const username = readString(findings, section, 'username', path) || defaultName;
  const password = readString(findings, section, 'password', path, { secret: true });
  return password === undefined ? { username } : { username, password };
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
      if (Number.isInteger(value) && (value as number) >= 0) tags.failover_priority = value as number;
      else findings.invalid(path, 'must be an integer >= 0', value);
    } else {
      if (TAGS_WITHOUT_EFFECT.includes(key)) {
        findings.warnings.push(`${path} is published but Stator does not act on it`);
      }
      tags[key] = value;
    }
  }
  if (tags.nofailover && (tags.failover_priority ?? 0) > 0) {
    findings.warnings.push(
      `tags.nofailover is true and tags.failover_priority is ${tags.failover_priority}: nofailover wins, as in Patroni`,
    );
  }
  return tags;
}

function readLogLevel(findings: Findings, doc: Mapping): StatorConfig['log']['level'] {
  const section = readSection(findings, doc, 'log', '');
  ignoreUnsupported(findings, section, 'log', ['level']);
  const level = readString(findings, section, 'level', 'log');
  if (level === undefined) return 'info';
  const mapped = LOG_LEVELS[level.trim().toLowerCase()];
  if (!mapped) findings.invalid('log.level', 'must be one of debug, info, warning, error', level);
  return mapped ?? 'info';
}
