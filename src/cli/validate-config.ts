import { stringify } from 'yaml';
import { isMapping } from '../config/config-values';
import { ConfigError, loadConfig } from '../config/load-config';

export const VALIDATE_USAGE = `       stator --validate-config [--print|-p] [--ignore-listen-port|-i] [<config.yml>]`;

/** Flags that only mean something with --validate-config (as Patroni's). */
const VALIDATE_ONLY_FLAGS = new Set(['--print', '-p', '--ignore-listen-port', '-i']);
const SECRET_KEY = /password/i;
const HIDDEN = '********';

export interface ValidateIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
}

/** Whether argv asks for validation, or uses a flag that needs it (a usage error the caller reports). */
export function wantsValidation(argv: string[]): boolean {
  return argv.some((arg) => arg === '--validate-config' || VALIDATE_ONLY_FLAGS.has(arg));
}

/**
 * `stator --validate-config [--print] [<config.yml>]`, as Patroni's: reads the file (or the environment alone) with the
 * agent's own loader, prints every problem on stderr and exits 1, or exits 0 (warnings on stderr). `--print` writes the
 * configuration after the environment overrides as YAML, with every password hidden (Patroni prints them in clear).
 * `-i` is accepted for Patroni's command lines: Stator's validation never binds the listen ports.
 * @returns the exit code.
 */
export function validateConfig(argv: string[], io: ValidateIo): number {
  const flags = argv.filter((arg) => arg.startsWith('-'));
  const files = argv.filter((arg) => !arg.startsWith('-'));
  const unknown = flags.filter((flag) => flag !== '--validate-config' && !VALIDATE_ONLY_FLAGS.has(flag));
  if (!flags.includes('--validate-config') || unknown.length > 0 || files.length > 1) {
    const reason = !flags.includes('--validate-config')
      ? `${flags.join(' ')}: can only be used with --validate-config`
      : unknown.length > 0
        ? `unknown option ${unknown.join(' ')}`
        : 'at most one configuration file';
    io.stderr(`stator: ${reason}\nusage:\n${VALIDATE_USAGE}\n`);
    return 2;
  }
  try {
    const loaded = loadConfig(files[0] ?? null, io.env);
    for (const warning of loaded.warnings) io.stderr(`WARNING: ${warning}\n`);
    if (flags.includes('--print') || flags.includes('-p')) io.stdout(stringify(hideSecrets(loaded.document)));
    return 0;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const problem of error.problems) io.stderr(`${problem}\n`);
    return 1;
  }
}

/** A copy in which the value of every key named like `password` (sslpassword, keyfile_password...) is hidden. */
export function hideSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(hideSecrets);
  // Only mappings are walked: a YAML 1.1 timestamp is a Date, printed as it is.
  if (!isMapping(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [
      key,
      SECRET_KEY.test(key) && inner !== null && typeof inner !== 'object' ? HIDDEN : hideSecrets(inner),
    ]),
  );
}
