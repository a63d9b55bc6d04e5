import { readFileSync } from 'node:fs';
import { parseDocument } from 'yaml';
import { readCtlSection } from './ctl-config';
import { NodeTags, StatorConfig } from './config.types';
import { BOOLEAN_RULE, describeValue, isMapping, parsePatroniBoolean } from './config-values';
import {
  Findings,
  ignoreUnsupported,
  isAbsent,
  Mapping,
  readOneOf,
  readRequiredString,
  readSection,
  readString,
} from './config-readers';
import { applyEnvironment, VARIABLE_BY_PATH } from './environment';
import { OTHER_DCS_SECTIONS, readDcs } from './etcd-config';
import { readBootstrap } from './bootstrap-config';
import { readEventLog } from './event-log-config';
import { readFence } from './fence-config';
import { readWatchdog } from './watchdog-config';
import { readLog } from './log-config';
import { readRestApi } from './restapi-config';
import { readPostgresql } from './postgresql-config';

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
  if (!isAbsent(doc.citus))
    findings.problem(
      'citus',
      'Citus clusters are not supported by Stator (it does not register workers with the coordinator); remove the section, or run this cluster with Patroni',
    );
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
  const inner = namespace
    .trim()
    .replace(/\/+/g, '/')
    .replace(/^\/|\/$/g, '');
  return inner === '' ? '' : `/${inner}`;
}

// ---- sections ----

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
