import { parseArgs } from 'node:util';

/** A wrong command line: the message names the flag or argument; exit code 2 with a hint to `--help`. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Exit codes of statorctl: 0 success, 1 the operation failed or was refused, 2 a usage error. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

export const FORMATS = ['table', 'json', 'yaml'] as const;
export type Format = (typeof FORMATS)[number];

/** Every flag statorctl knows; each command accepts the global ones and its own (COMMANDS). */
export const OPTIONS = {
  // global
  api: { type: 'string' },
  config: { type: 'string', short: 'c' },
  format: { type: 'string' },
  auth: { type: 'string' },
  cacert: { type: 'string' },
  cert: { type: 'string' },
  key: { type: 'string' },
  insecure: { type: 'boolean' },
  timeout: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  // commands
  watch: { type: 'boolean', short: 'W' },
  interval: { type: 'string', short: 'w' },
  leader: { type: 'string' },
  primary: { type: 'string' },
  candidate: { type: 'string' },
  site: { type: 'string' },
  scheduled: { type: 'string' },
  force: { type: 'boolean' },
  role: { type: 'string' },
  pending: { type: 'boolean' },
  wait: { type: 'boolean' },
  set: { type: 'string', short: 's', multiple: true },
  pg: { type: 'string', short: 'p', multiple: true },
  stream: { type: 'string' },
  node: { type: 'string' },
  type: { type: 'string' },
  since: { type: 'string' },
  limit: { type: 'string' },
  follow: { type: 'boolean', short: 'f' },
  from: { type: 'string' },
  to: { type: 'string' },
  at: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  'restore-command': { type: 'string' },
  'primary-slot-name': { type: 'string' },
} as const;

export type OptionName = keyof typeof OPTIONS;

export const GLOBAL_OPTIONS: readonly OptionName[] = [
  'api',
  'config',
  'format',
  'auth',
  'cacert',
  'cert',
  'key',
  'insecure',
  'timeout',
  'help',
];

/** Each command: its own flags, how many positionals it takes, and a line of help. */
export interface CommandSpec {
  options: readonly OptionName[];
  /** Positional arguments: `members` any number of member names; `one` exactly one word (from `choices`); `none`. */
  positionals: 'none' | 'members' | 'one';
  choices?: readonly string[];
  usage: string;
  summary: string;
}

export const COMMANDS: Record<string, CommandSpec> = {
  list: {
    options: ['watch', 'interval', 'site'],
    positionals: 'none',
    usage: 'list [--watch] [-w SECONDS] [--site SITE]',
    summary: 'members with site, role, state, timeline, lag, pending restart, tags',
  },
  topology: {
    options: ['watch', 'interval'],
    positionals: 'none',
    usage: 'topology [--watch] [-w SECONDS]',
    summary: 'the members as a replication tree',
  },
  switchover: {
    options: ['leader', 'primary', 'candidate', 'site', 'scheduled', 'force'],
    positionals: 'none',
    usage: 'switchover [--leader NAME] [--candidate NAME | --site SITE] [--scheduled TIME|now] [--force]',
    summary: 'planned change of leader, with progress',
  },
  failover: {
    options: ['candidate', 'site', 'force'],
    positionals: 'none',
    usage: 'failover [--candidate NAME | --site SITE] [--force]',
    summary: 'forced change of leader, with progress',
  },
  restart: {
    options: ['role', 'pending', 'scheduled', 'force'],
    positionals: 'members',
    usage: 'restart [MEMBER...] [--role leader|replica|any] [--pending] [--scheduled TIME] [--force]',
    summary: 'restart PostgreSQL on members, with progress',
  },
  reload: {
    options: ['force'],
    positionals: 'members',
    usage: 'reload [MEMBER...] [--force]',
    summary: 'reload the configuration of members',
  },
  reinit: {
    options: ['force', 'wait'],
    positionals: 'members',
    usage: 'reinit MEMBER... [--force] [--wait]',
    summary:
      'rebuild replicas from the leader, followed to the end with progress (--wait is accepted as patronictl takes it)',
  },
  pause: { options: ['wait'], positionals: 'none', usage: 'pause [--wait]', summary: 'turn automatic failover off' },
  resume: {
    options: ['wait'],
    positionals: 'none',
    usage: 'resume [--wait]',
    summary: 'turn automatic failover back on',
  },
  'edit-config': {
    options: ['set', 'pg', 'force'],
    positionals: 'none',
    usage: 'edit-config [-s KEY=VALUE]... [-p PARAM=VALUE]... [--force]',
    summary: 'edit the dynamic configuration in $EDITOR (or with -s/-p), show the diff, validate, apply',
  },
  'show-config': { options: [], positionals: 'none', usage: 'show-config', summary: 'print the dynamic configuration' },
  'demote-cluster': {
    options: ['host', 'port', 'restore-command', 'primary-slot-name', 'force'],
    positionals: 'members',
    usage:
      'demote-cluster [CLUSTER] [--host HOST] [--port PORT] [--restore-command CMD] [--primary-slot-name SLOT] [--force]',
    summary: 'turn the cluster into a standby cluster of a remote primary (or of an archive), with progress',
  },
  'promote-cluster': {
    options: ['force'],
    positionals: 'members',
    usage: 'promote-cluster [CLUSTER] [--force]',
    summary: 'promote a standby cluster: it runs on its own, writable',
  },
  history: { options: [], positionals: 'none', usage: 'history', summary: 'timeline switches' },
  flush: {
    options: ['force'],
    positionals: 'one',
    choices: ['switchover', 'restart'],
    usage: 'flush switchover|restart [MEMBER...] [--force]',
    summary: 'cancel a scheduled switchover or scheduled restarts',
  },
  events: {
    options: ['stream', 'node', 'type', 'since', 'limit', 'follow'],
    positionals: 'none',
    usage: 'events [--stream S] [--node N] [--type T] [--since ISO] [--limit N] [--follow]',
    summary: 'the event log, or live with --follow',
  },
  audit: {
    options: ['from', 'to', 'at'],
    positionals: 'one',
    choices: ['verify', 'export', 'replay'],
    usage: 'audit verify | export [--from ISO] [--to ISO] | replay --at ISO',
    summary: "check, export or replay the cluster's event log, read through the API",
  },
  diagnose: {
    options: [],
    positionals: 'none',
    usage: 'diagnose',
    summary: "every member's diagnostics (alias: doctor)",
  },
  completion: {
    options: [],
    positionals: 'one',
    choices: ['bash', 'zsh'],
    usage: 'completion bash|zsh',
    summary: 'print a shell completion script',
  },
  version: { options: [], positionals: 'none', usage: 'version', summary: "statorctl's version" },
};

export const ALIASES: Record<string, string> = { doctor: 'diagnose', 'show-topology': 'topology' };

export type Values = {
  [K in OptionName]?: (typeof OPTIONS)[K] extends { multiple: true }
    ? string[]
    : (typeof OPTIONS)[K]['type'] extends 'boolean'
      ? boolean
      : string;
};

export interface CommandLine {
  command: string;
  /** Positionals after the command (the `one` word first). */
  args: string[];
  values: Values;
  format: Format;
  /** Deadline of each API request, in ms. */
  timeoutMs: number;
}

/**
 * Parses `statorctl [global flags] <command> [args] [flags]`; flags may come anywhere.
 * @throws UsageError naming the flag or argument at fault.
 */
export function parseCommandLine(argv: string[]): CommandLine {
  // `statorctl --version`, as `stator --version` (and what a package's smoke test runs): the `version` command.
  if (argv.length === 1 && argv[0] === '--version')
    return { command: 'version', args: [], values: {} as Values, format: 'table', timeoutMs: 10_000 };
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    const message = (error as Error).message;
    const unknown = /Unknown option '([^']+)'/.exec(message);
    throw new UsageError(unknown ? `unknown flag ${unknown[1]}` : message.split('\n')[0].replace(/\.$/, ''));
  }
  const values = parsed.values as Values;
  const [word, ...args] = parsed.positionals;
  if (word === undefined || word === 'help')
    return { command: 'help', args: word === 'help' ? args : [], values, format: 'table', timeoutMs: 10_000 };
  const command = ALIASES[word] ?? word;
  const spec = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
  if (!spec) throw new UsageError(`unknown command '${word}' (commands: ${Object.keys(COMMANDS).join(', ')})`);
  if (values.help) return { command: 'help', args: [command], values, format: 'table', timeoutMs: 10_000 };
  const allowed = new Set<string>([...GLOBAL_OPTIONS, ...spec.options]);
  const misplaced = Object.keys(values).find((name) => !allowed.has(name));
  if (misplaced) throw new UsageError(`${command} does not take --${misplaced}`);
  checkPositionals(command, spec, args);
  return { command, args, values, format: formatOf(values.format), timeoutMs: timeoutOf(values.timeout) };
}

function checkPositionals(command: string, spec: CommandSpec, args: string[]): void {
  if (spec.positionals === 'none' && args.length > 0)
    throw new UsageError(`${command}: unexpected argument '${args[0]}'`);
  if (spec.positionals === 'one') {
    if (args.length === 0) throw new UsageError(`${command}: needs one of ${spec.choices!.join(', ')}`);
    if (!spec.choices!.includes(args[0]))
      throw new UsageError(`${command}: '${args[0]}' is not one of ${spec.choices!.join(', ')}`);
    // `flush switchover|restart` takes member names after the word; the others nothing.
    if (command !== 'flush' && args.length > 1) throw new UsageError(`${command}: unexpected argument '${args[1]}'`);
  }
}

function formatOf(value: string | undefined): Format {
  if (value === undefined) return 'table';
  if (!(FORMATS as readonly string[]).includes(value))
    throw new UsageError(`--format: must be one of ${FORMATS.join(', ')}, got '${value}'`);
  return value as Format;
}

function timeoutOf(value: string | undefined): number {
  if (value === undefined) return 10_000;
  const seconds = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || seconds <= 0 || seconds > 3600)
    throw new UsageError(`--timeout: seconds from 0 to 3600, got '${value}'`);
  return Math.round(seconds * 1000);
}

/** `--interval` / `-w` of list --watch, in ms. */
export function intervalOf(value: string | undefined): number {
  if (value === undefined) return 2000;
  const seconds = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || seconds < 0.1 || seconds > 3600)
    throw new UsageError(`--interval: seconds from 0.1 to 3600, got '${value}'`);
  return Math.round(seconds * 1000);
}

/** `--limit` of events. */
export function limitOf(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const limit = Number(value);
  if (!/^\d+$/.test(value) || limit < 1 || limit > 10_000)
    throw new UsageError(`--limit: an integer from 1 to 10000, got '${value}'`);
  return limit;
}

/** `--auth user:password`. */
export function credentialsOf(value: string): { username: string; password: string } {
  const colon = value.indexOf(':');
  if (colon <= 0) throw new UsageError('--auth: must be USER:PASSWORD');
  return { username: value.slice(0, colon), password: value.slice(colon + 1) };
}

/** `-s key.path=value` / `-p param=value` pairs. */
export function keyValueOf(flag: string, value: string): { key: string; value: string } {
  const equals = value.indexOf('=');
  if (equals <= 0) throw new UsageError(`${flag}: must be KEY=VALUE, got '${value}'`);
  return { key: value.slice(0, equals).trim(), value: value.slice(equals + 1) };
}
