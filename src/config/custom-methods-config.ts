import { splitCommandLine } from '../common/command-line';
import { BootstrapMethod, CustomMethod, MethodOption } from './config.types';
import {
  childPath,
  Findings,
  isAbsent,
  Mapping,
  readRequiredString,
  readSection,
  readStringList,
} from './config-readers';
import { BOOLEAN_RULE, isMapping, parsePatroniBoolean } from './config-values';

/** Keys of a bootstrap method's section that are settings, not arguments for its command (as the reference). */
const BOOTSTRAP_RESERVED = ['command', 'no_params', 'keep_existing_recovery_conf', 'recovery_conf', 'scope', 'datadir'];
/** At most this many arguments from a section: every value is bounded. */
const MAX_OPTIONS = 64;

/**
 * `postgresql.create_replica_methods` and the section of each custom method in it
 * (`postgresql.<name>`: `command`, `no_params`, `keep_data`, `no_leader`, and any `--key=value`).
 * `basebackup` is the built-in method; its options stay in `postgresql.basebackup`.
 */
export function readReplicaMethods(
  findings: Findings,
  postgresql: Mapping,
): { create_replica_methods?: string[]; replica_methods?: Record<string, CustomMethod> } {
  const path = 'postgresql';
  const names = readStringList(findings, postgresql, 'create_replica_methods', path) ?? [];
  const sections = methodSectionNames(postgresql);
  if (sections.length === 0) return names.length > 0 ? { create_replica_methods: names } : {};
  const replica_methods: Record<string, CustomMethod> = {};
  for (const name of sections) {
    if (name === 'basebackup') continue;
    const section = readSection(findings, postgresql, name, path);
    // The reference runs a method without a section as a command named like the method.
    replica_methods[name] = readMethod(findings, { command: name, ...section }, childPath(path, name), [
      'command',
      'no_params',
    ]);
  }
  return { ...(names.length > 0 ? { create_replica_methods: names } : {}), replica_methods };
}

/**
 * The custom method sections of `postgresql`: those `create_replica_methods` names, and any other
 * mapping with a `command` (a method only a standby cluster's `create_replica_methods` may name).
 */
export function methodSectionNames(postgresql: Mapping): string[] {
  const listed = Array.isArray(postgresql.create_replica_methods)
    ? postgresql.create_replica_methods.filter((name): name is string => typeof name === 'string')
    : [];
  const withCommand = Object.keys(postgresql).filter((key) => {
    const value = postgresql[key];
    return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.hasOwn(value, 'command');
  });
  return [...new Set([...listed, ...withCommand])].filter((name) => name !== 'basebackup');
}

/**
 * A replica method's flag (`no_leader`, `keep_data`) as the reference reads it: YAML `true`, or a value
 * like `'1'`, `on`, `yes` (the harness's `no_leader: '1'`). Anything else, `'false'` included, is off.
 */
export function methodFlag(options: Record<string, MethodOption>, key: string): boolean {
  return parsePatroniBoolean(options[key]) === true;
}

/** `bootstrap.<name>`: the command, its arguments, and the recovery the first start runs. */
export function readBootstrapMethod(findings: Findings, bootstrap: Mapping, name: string): BootstrapMethod {
  const path = `bootstrap.${name}`;
  const section = readSection(findings, bootstrap, name, 'bootstrap');
  const method: BootstrapMethod = readMethod(findings, section, path, BOOTSTRAP_RESERVED);
  const keep = readOptionalFlag(findings, section, 'keep_existing_recovery_conf', path);
  if (keep) method.keep_existing_recovery_conf = true;
  if (!isAbsent(section.recovery_conf)) {
    const recovery = readSection(findings, section, 'recovery_conf', path);
    method.recovery_conf = readScalars(findings, recovery, childPath(path, 'recovery_conf'), []);
  }
  return method;
}

function readMethod(findings: Findings, section: Mapping, path: string, reserved: string[]): CustomMethod {
  const command = readRequiredString(findings, section, 'command', path) ?? '';
  if (command && splitCommandLine(command) === null)
    findings.invalid(childPath(path, 'command'), 'must be a command line with balanced quotes', command);
  const method: CustomMethod = { command, options: readScalars(findings, section, path, reserved) };
  if (readOptionalFlag(findings, section, 'no_params', path)) method.no_params = true;
  return method;
}

/** Every other key of the section, which must hold a string, a number or a boolean. */
function readScalars(
  findings: Findings,
  section: Mapping,
  path: string,
  reserved: string[],
): Record<string, MethodOption> {
  const options: Record<string, MethodOption> = {};
  for (const [key, value] of Object.entries(section)) {
    if (reserved.includes(key) || isAbsent(value)) continue;
    if (Object.keys(options).length >= MAX_OPTIONS) {
      findings.problem(path, `at most ${MAX_OPTIONS} options`);
      break;
    }
    if (
      typeof value === 'string' ||
      typeof value === 'boolean' ||
      (typeof value === 'number' && Number.isFinite(value))
    )
      options[key] = value;
    else
      findings.invalid(
        childPath(path, key),
        isMapping(value) || Array.isArray(value) ? 'must be a string, a number or a boolean' : 'must be finite',
        value,
      );
  }
  return options;
}

function readOptionalFlag(findings: Findings, section: Mapping, key: string, path: string): boolean {
  const value = section[key];
  if (isAbsent(value)) return false;
  const flag = parsePatroniBoolean(value);
  if (flag === undefined) findings.invalid(childPath(path, key), BOOLEAN_RULE, value);
  return flag ?? false;
}
