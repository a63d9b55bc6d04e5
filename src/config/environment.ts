import { parse } from 'yaml';
import { Findings, Mapping } from './config-readers';
import { describeValue, isMapping } from './config-values';

/** Each setting can be given as PATRONI_<name> or STATOR_<name>; the later prefix wins, and both win over the file. */
const ENVIRONMENT_PREFIXES = ['PATRONI_', 'STATOR_'] as const;

/** Patroni's environment variable names ("Environment Configuration Settings") for the keys Stator supports. */
const ENVIRONMENT_SETTINGS: ReadonlyArray<{ name: string; path: string; list?: true }> = [
  { name: 'SCOPE', path: 'scope' },
  // Container deployments select compatibility mode without editing the file (STATOR_COMPAT=patroni).
  { name: 'COMPAT', path: 'compat' },
  { name: 'NAMESPACE', path: 'namespace' },
  { name: 'NAME', path: 'name' },
  { name: 'SITE', path: 'site' },
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
  { name: 'RESTAPI_KEYFILE_PASSWORD', path: 'restapi.keyfile_password' },
  { name: 'RESTAPI_CIPHERS', path: 'restapi.ciphers' },
  { name: 'RESTAPI_ALLOWLIST_INCLUDE_MEMBERS', path: 'restapi.allowlist_include_members' },
  { name: 'RESTAPI_REQUEST_QUEUE_SIZE', path: 'restapi.request_queue_size' },
  { name: 'RESTAPI_SERVER_TOKENS', path: 'restapi.server_tokens' },
  { name: 'CTL_INSECURE', path: 'ctl.insecure' },
  { name: 'CTL_CACERT', path: 'ctl.cacert' },
  { name: 'CTL_CERTFILE', path: 'ctl.certfile' },
  { name: 'CTL_KEYFILE', path: 'ctl.keyfile' },
  { name: 'CTL_KEYFILE_PASSWORD', path: 'ctl.keyfile_password' },
  { name: 'CTL_USERNAME', path: 'ctl.authentication.username' },
  { name: 'CTL_PASSWORD', path: 'ctl.authentication.password' },
  // HOST before HOSTS: when a prefix sets both, HOSTS is applied last and wins, as `hosts` wins over `host` in Patroni.
  { name: 'ETCD3_HOST', path: 'etcd3.host' },
  { name: 'ETCD3_HOSTS', path: 'etcd3.hosts', list: true },
  { name: 'ETCD3_PROTOCOL', path: 'etcd3.protocol' },
  { name: 'ETCD3_USERNAME', path: 'etcd3.username' },
  { name: 'ETCD3_PASSWORD', path: 'etcd3.password' },
  { name: 'ETCD3_CACERT', path: 'etcd3.cacert' },
  { name: 'ETCD3_CERT', path: 'etcd3.cert' },
  { name: 'ETCD3_KEY', path: 'etcd3.key' },
  { name: 'ETCD3_KEY_PASSWORD', path: 'etcd3.key_password' },
  { name: 'ETCD3_URL', path: 'etcd3.url' },
  { name: 'ETCD3_PROXY', path: 'etcd3.proxy' },
  { name: 'ETCD3_SRV', path: 'etcd3.srv' },
  { name: 'ETCD3_SRV_SUFFIX', path: 'etcd3.srv_suffix' },
  // Stator's own: STATOR_FENCE_AGENT_GRACE (PATRONI_ names them too, harmlessly: Patroni has no fence section).
  { name: 'FENCE_AGENT_GRACE', path: 'fence.agent_grace' },
  { name: 'FENCE_RELEASE_LEASE', path: 'fence.release_lease' },
  { name: 'FENCE_PYTHON', path: 'fence.python' },
  ...['max_age', 'max_events_per_stream', 'max_bytes', 'etcd_quota_bytes', 'etcd_quota_share'].map((key) => ({
    name: `EVENT_LOG_${key.toUpperCase()}`,
    path: `event_log.${key}`,
  })),
  { name: 'POSTGRESQL_LISTEN', path: 'postgresql.listen' },
  { name: 'POSTGRESQL_CONNECT_ADDRESS', path: 'postgresql.connect_address' },
  { name: 'POSTGRESQL_DATA_DIR', path: 'postgresql.data_dir' },
  { name: 'POSTGRESQL_BIN_DIR', path: 'postgresql.bin_dir' },
  { name: 'POSTGRESQL_PROXY_ADDRESS', path: 'postgresql.proxy_address' },
  // Patroni's names keep the program's own case: PATRONI_POSTGRESQL_BIN_pg_ctl.
  ...['pg_ctl', 'initdb', 'pg_controldata', 'pg_basebackup', 'postgres', 'pg_isready', 'pg_rewind'].map((program) => ({
    name: `POSTGRESQL_BIN_${program}`,
    path: `postgresql.bin_name.${program}`,
  })),
  { name: 'POSTGRESQL_CONFIG_DIR', path: 'postgresql.config_dir' },
  { name: 'SUPERUSER_USERNAME', path: 'postgresql.authentication.superuser.username' },
  { name: 'SUPERUSER_PASSWORD', path: 'postgresql.authentication.superuser.password' },
  { name: 'REPLICATION_USERNAME', path: 'postgresql.authentication.replication.username' },
  { name: 'REPLICATION_PASSWORD', path: 'postgresql.authentication.replication.password' },
  { name: 'LOG_LEVEL', path: 'log.level' },
  { name: 'LOG_TRACEBACK_LEVEL', path: 'log.traceback_level' },
  { name: 'LOG_MAX_QUEUE_SIZE', path: 'log.max_queue_size' },
  { name: 'LOG_DEDUPLICATE_HEARTBEAT_LOGS', path: 'log.deduplicate_heartbeat_logs' },
];

/** Key path -> the PATRONI_ variable that can set it, for "required (or ...)" hints. */
export const VARIABLE_BY_PATH = new Map(
  ENVIRONMENT_SETTINGS.map((setting) => [setting.path, `PATRONI_${setting.name}`]),
);

/** Patroni's etcd v2 variables: recognised only to say that etcd3 is needed instead. */
const ETCD_V2_VARIABLE = /^(?:PATRONI|STATOR)_ETCD_(HOSTS?|URL|PROXY|SRV)$/;

/**
 * Sets the keys named by PATRONI_* and STATOR_* variables in the document read from the file (STATOR_ last, so it
 * wins), remembering which variable set each key so messages can name it; unknown PATRONI_ variables are warned about.
 */
export function applyEnvironment(doc: Mapping, env: NodeJS.ProcessEnv, findings: Findings): void {
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
