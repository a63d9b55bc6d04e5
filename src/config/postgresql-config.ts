import { splitCommandLine } from '../common/command-line';
import { CALLBACK_ACTIONS, LIBPQ_OPTIONS, LibpqOptions, PostgresqlConfig, PostgresRole } from './config.types';
import {
  Findings,
  ignoreUnsupported,
  isAbsent,
  Mapping,
  readRequiredString,
  readSection,
  readString,
  readStringList,
} from './config-readers';
import { readConfigurationFiles } from './configuration-files-config';
import { methodSectionNames, readReplicaMethods } from './custom-methods-config';
import { BOOLEAN_RULE, PARAMETER_RULE, isMapping, isParameterValue, parsePatroniBoolean } from './config-values';
import { checkListenAddress, readConnectAddress } from './listen-address';
import { PROGRAM_KEYS, readProgramSettings } from './postgresql-programs-config';

export const DEFAULT_BIN_DIR = '/usr/lib/postgresql/15/bin';

/** `postgresql`: the local server's addresses, directories, users, parameters, callbacks and replica methods. */
export function readPostgresql(findings: Findings, doc: Mapping): PostgresqlConfig {
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
    if (splitCommandLine(command) === null)
      findings.invalid(`${path}.${action}`, 'must be a command line with balanced quotes', command);
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

function readPostgresUser(
  findings: Findings,
  authentication: Mapping,
  role: 'superuser' | 'replication' | 'rewind',
  defaultName: string,
): PostgresRole {
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
  if (libpq.sslmode && !SSL_MODES.includes(libpq.sslmode))
    findings.invalid(`${path}.sslmode`, `must be one of ${SSL_MODES.join(', ')}`, libpq.sslmode);
  return {
    username,
    ...(password === undefined ? {} : { password }),
    ...(Object.keys(libpq).length > 0 ? { libpq } : {}),
  };
}

const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'];

/** `basebackup`-style options: a list of names and single-key mappings, or one mapping (as Patroni accepts both). */
function readOptionList(
  findings: Findings,
  section: Mapping,
  key: string,
  path: string,
): Array<string | Record<string, string>> {
  const value = section[key];
  if (isAbsent(value)) return [];
  const rule = 'must be a list of option names and single-key mappings (name: value), or a mapping';
  const items = isMapping(value)
    ? Object.entries(value).map(([name, v]) => ({ [name]: v }))
    : Array.isArray(value)
      ? value
      : null;
  if (!items) {
    findings.invalid(`${path}.${key}`, rule, value);
    return [];
  }
  const options: Array<string | Record<string, string>> = [];
  items.forEach((item: unknown, index) => {
    const entries = isMapping(item) ? Object.entries(item) : [];
    if (typeof item === 'string' && /^[a-z][a-z-]*$/.test(item)) options.push(item);
    else if (entries.length === 1 && /^[a-z][a-z-]*$/.test(entries[0][0]) && isParameterValue(entries[0][1]))
      options.push({ [entries[0][0]]: String(entries[0][1]) });
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
