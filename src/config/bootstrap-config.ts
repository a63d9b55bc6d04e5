import { DynamicConfig } from './config.types';
import { reviewConfigWrite } from './config-write-review';
import { BootstrapMethod, StatorConfig } from './config.types';
import { readBootstrapMethod } from './custom-methods-config';
import { Findings, isAbsent, Mapping, readSection, readString, readStringList } from './config-readers';
import { DYNAMIC_CONFIG_DEFAULTS, effectiveDynamicConfig, validateDynamicConfigKeys } from './dynamic-config';
import { isMapping, isParameterValue } from './config-values';

/** The keys of `bootstrap` that Stator reads; any other names a custom bootstrap method's section. */
const BOOTSTRAP_KEYS = ['dcs', 'method', 'initdb', 'post_bootstrap', 'post_init', 'pg_hba'];

/** The `bootstrap` section: the first /config (`bootstrap.dcs`), the bootstrap method and initdb's options. */
export function readBootstrap(findings: Findings, doc: Mapping): StatorConfig['bootstrap'] {
  const path = 'bootstrap';
  const section = readSection(findings, doc, 'bootstrap', '');
  const dcs = readBootstrapDcs(findings, section);
  const method = readString(findings, section, 'method', path) || 'initdb';
  const methods: Record<string, BootstrapMethod> = {};
  for (const [key, value] of Object.entries(section)) {
    if (BOOTSTRAP_KEYS.includes(key)) continue;
    if (key === 'users') {
      // Patroni 4 only logs an error and creates nobody: a cluster missing its roles must not start quietly.
      findings.problem(
        'bootstrap.users',
        'removed in Patroni 4.0 and not supported: create roles in a bootstrap.post_bootstrap script',
      );
      continue;
    }
    // Any other mapping with a `command` is a custom bootstrap method, as in Patroni.
    if (key === method || (isMapping(value) && 'command' in value)) {
      methods[key] = readBootstrapMethod(findings, section, key);
    } else findings.unsupported(`bootstrap.${key}`);
  }
  if (method !== 'initdb' && !(method in methods)) {
    findings.problems.push(`bootstrap.${method}.command: required because bootstrap.method is "${method}"`);
  }
  // `post_init` is the reference's older name for the same script.
  const postBootstrap =
    readString(findings, section, 'post_bootstrap', path) ||
    readString(findings, section, 'post_init', path) ||
    undefined;
  const pgHba = readStringList(findings, section, 'pg_hba', path) ?? [];
  return {
    dcs,
    method,
    methods,
    initdb: readInitdbOptions(findings, section),
    ...(postBootstrap ? { post_bootstrap: postBootstrap } : {}),
    ...(pgHba.length ? { pg_hba: pgHba } : {}),
  };
}

function readBootstrapDcs(findings: Findings, bootstrap: Mapping): DynamicConfig {
  const section = readSection(findings, bootstrap, 'dcs', 'bootstrap');
  const problems = validateDynamicConfigKeys(section);
  findings.problems.push(...problems.map((problem) => `bootstrap.dcs.${problem}`));
  // A Patroni file keeps starting, but what Stator would refuse through /config is said out loud here.
  const review = reviewConfigWrite(section);
  findings.warnings.push(...review.problems.map((line) => `bootstrap.dcs.${line}`));
  const dcs = withDynamicDefaults(section);
  if (problems.length === 0) {
    // Patroni clamps a bootstrap section that breaks loop_wait + 2*retry_timeout <= ttl; so do we, but say so.
    findings.warnings.push(...effectiveDynamicConfig(null, dcs).adjustments.map((line) => `bootstrap.dcs: ${line}`));
  }
  return dcs;
}

/**
 * The defaults first (they lead the /config written at bootstrap, as in Patroni's recordings), then the file's
 * keys as written. No `primary_start_timeout`: it applies its default when absent, and a stored one would
 * override a later `master_start_timeout`, the older name Patroni still reads when the new one is absent.
 */
function withDynamicDefaults(section: Mapping): DynamicConfig {
  const defaults = DYNAMIC_CONFIG_DEFAULTS;
  const given = withoutNulls(section);
  const postgresql = isMapping(given.postgresql) ? withoutNulls(given.postgresql) : {};
  return {
    ttl: defaults.ttl,
    loop_wait: defaults.loop_wait,
    retry_timeout: defaults.retry_timeout,
    maximum_lag_on_failover: defaults.maximum_lag_on_failover,
    ...given,
    postgresql: { use_pg_rewind: defaults.use_pg_rewind, use_slots: defaults.use_slots, ...postgresql },
  };
}

/** An empty YAML value (`ttl:`) means "not set", not "null". */
function withoutNulls(section: Mapping): Mapping {
  return Object.fromEntries(Object.entries(section).filter(([, value]) => value !== null));
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
