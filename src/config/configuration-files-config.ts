import { isAbsolute, join, resolve } from 'node:path';
import { PostgresqlConfig } from './config.types';
import { Findings, isAbsent, isReadableFile, Mapping, readString } from './config-readers';
import { describeValue, isMapping, parameterProblem } from './config-values';
import { decidedByStator } from './dynamic-files-config';

/** `postgresql.config_dir`, `custom_conf` and `recovery_conf` of the local file. */
export function readConfigurationFiles(
  findings: Findings,
  section: Mapping,
): Pick<PostgresqlConfig, 'config_dir' | 'custom_conf' | 'recovery_conf'> {
  const path = 'postgresql';
  const configDir = readString(findings, section, 'config_dir', path) || undefined;
  const customConf = readString(findings, section, 'custom_conf', path) || undefined;
  if (customConf) {
    // PostgreSQL reads a relative include from the directory of postgresql.conf; a missing file would stop it starting.
    const dataDir = readString(findings, section, 'data_dir', path) ?? '';
    const file = isAbsolute(customConf) ? customConf : join(resolve(configDir ?? dataDir), customConf);
    if (!isReadableFile(file))
      findings.problem(
        'postgresql.custom_conf',
        `${file} is not a readable file (PostgreSQL would not start without it)`,
      );
  }
  const recoveryConf = readRecoveryConf(section.recovery_conf, 'postgresql.recovery_conf', findings);
  return {
    ...(configDir ? { config_dir: resolve(configDir) } : {}),
    ...(customConf ? { custom_conf: customConf } : {}),
    ...(recoveryConf && Object.keys(recoveryConf).length ? { recovery_conf: recoveryConf } : {}),
  };
}

/**
 * A `recovery_conf` mapping: each value a server parameter's. The settings Stator decides are left out with a
 * warning (Patroni drops them silently). Problems go to `findings` (the local file) and make it refuse to start.
 */
export function readRecoveryConf(
  value: unknown,
  path: string,
  findings: Findings,
): Record<string, string | number | boolean> | undefined {
  if (isAbsent(value)) return undefined;
  if (!isMapping(value)) {
    findings.invalid(
      path,
      'must be a mapping of recovery settings (restore_command, recovery_min_apply_delay...)',
      value,
    );
    return undefined;
  }
  const settings: Record<string, string | number | boolean> = {};
  for (const [name, setting] of Object.entries(value)) {
    if (isAbsent(setting)) continue;
    const problem = parameterProblem(name, setting);
    if (problem)
      findings.problem(
        `${path}.${name.length > 63 ? describeValue(name) : name}`,
        `${problem}, got ${describeValue(setting)}`,
      );
    else if (decidedByStator(name))
      findings.warnings.push(
        `${path}.${name} ignored: Stator decides it for a replica (the upstream, timeline latest, no recovery target)`,
      );
    else settings[name] = setting as string | number | boolean;
  }
  return settings;
}
