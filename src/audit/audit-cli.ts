import { parseArgs } from 'node:util';
import { DEFAULT_NAMESPACE, normalizeNamespace } from '../config/load-config';
import { AuditLog, AuditSource, loadAuditLog, SourceError } from './audit-source';
import { clusterAt, clusterAtJson, formatClusterAt, removedUpTo } from './cluster-at';
import { exportLines, TimeRange } from './export';
import { AuditProblem, count, verifyLog, VerifyReport } from './verify';

export const AUDIT_USAGE = `usage: stator audit verify <source> [--api http://host:port]
       stator audit export <source> [--from ISO] [--to ISO]
       stator audit replay <source> --at ISO [--json]

source, one of:
  --etcd host:port[,host:port] --scope NAME   the event store in etcd
      [--namespace /service]                   the cluster's namespace, if not the default
  --config stator.yml                          etcd3.hosts and scope of a node's configuration
  --file events.jsonl                          an export

verify  checks every stream's hash chain, replays every node's machine transitions and checks
        where the machines end; with --api, compares the node's /history and /schedule with the log
export  writes the events in store order as JSON lines, those with --from <= at <= --to
replay  prints the cluster as the log tells it at an instant (--json: as a JSON document)

exit codes: 0 all good, 1 problems found, 2 usage error or source unreachable`;

/** Exit codes of `stator audit`. */
export const AUDIT_EXIT = { ok: 0, problems: 1, usageOrSource: 2 } as const;

/** Where `stator audit` writes, and what it reads besides its arguments. */
export interface AuditIo {
  stdout(text: string): void;
  stderr(text: string): void;
  env: NodeJS.ProcessEnv;
  fetch?: typeof fetch;
}

/** A wrong command line: exit code 2 with the usage. */
class UsageError extends Error {}

const OPTIONS = {
  etcd: { type: 'string' },
  scope: { type: 'string' },
  namespace: { type: 'string' },
  config: { type: 'string' },
  file: { type: 'string' },
  api: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  at: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The options each command takes besides the source ones. */
const COMMAND_OPTIONS: Record<string, string[]> = {
  verify: ['api'],
  export: ['from', 'to'],
  replay: ['at', 'json'],
};
const SOURCE_OPTIONS = ['etcd', 'scope', 'namespace', 'config', 'file'];

type ParsedOptions = { [K in keyof typeof OPTIONS]?: (typeof OPTIONS)[K]['type'] extends 'boolean' ? boolean : string };

/**
 * `stator audit <verify|export|replay> ...` (argv after `audit`); resolves with the exit code.
 * `source`: the log as the caller read it (`statorctl audit`); the source options are then not taken.
 */
export async function runAudit(argv: string[], io: AuditIo, source?: AuditSource): Promise<number> {
  try {
    const { command, options } = parseCommandLine(argv, source !== undefined);
    if (command === 'help') {
      io.stdout(`${AUDIT_USAGE}\n`);
      return AUDIT_EXIT.ok;
    }
    source ??= sourceOf(options);
    if (command === 'verify') {
      const api = options.api === undefined ? undefined : apiUrl(options.api);
      const log = await loadAuditLog(source, io.env);
      const report = await verifyLog(log.events, { api, fetch: io.fetch, checkpoint: log.checkpoint });
      io.stdout(formatVerifyReport(report, log));
      return hasProblems(report) ? AUDIT_EXIT.problems : AUDIT_EXIT.ok;
    }
    if (command === 'export') {
      const range: TimeRange = { from: instantOption('from', options.from), to: instantOption('to', options.to) };
      const log = await loadAuditLog(source, io.env);
      io.stdout(exportLines(log.events, range, log.checkpoint));
      return AUDIT_EXIT.ok;
    }
    const instant = instantOption('at', options.at);
    if (instant === undefined) throw new UsageError('replay needs --at ISO');
    const log = await loadAuditLog(source, io.env);
    const removedUntil = removedUpTo(log.checkpoint);
    if (removedUntil !== null && instant < removedUntil) {
      throw new SourceError(
        `retention removed the events up to ${new Date(removedUntil).toISOString()}; replay --at needs a later instant`,
      );
    }
    const state = clusterAt(log.events, instant, log.checkpoint);
    io.stdout(options.json ? clusterAtJson(state) : formatClusterAt(state));
    return AUDIT_EXIT.ok;
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`stator audit: usage error: ${error.message}\n${AUDIT_USAGE}\n`);
      return AUDIT_EXIT.usageOrSource;
    }
    if (error instanceof SourceError) {
      io.stderr(`stator audit: cannot read the source: ${error.message}\n`);
      return AUDIT_EXIT.usageOrSource;
    }
    throw error;
  }
}

/**
 * The report for a person: one line per check (✔ passed, ✘ failed, – skipped), the number of
 * events checked, then every problem as `stream#seq (line N): what`.
 */
export function formatVerifyReport(report: VerifyReport, log: Pick<AuditLog, 'lines' | 'description'>): string {
  const marks = { passed: '✔', failed: '✘', skipped: '–' };
  const lines = [`audit of ${log.description}`];
  for (const check of report.checks) lines.push(`${marks[check.status]} ${check.title}: ${check.summary}`);
  const problems = report.checks.flatMap((check) => check.problems);
  lines.push(
    `${count(report.eventsChecked, 'event')} checked, ${problems.length === 0 ? 'no problems' : count(problems.length, 'problem')}`,
  );
  for (const problem of problems) lines.push(`  ${describeProblem(problem, log.lines)}`);
  return `${lines.join('\n')}\n`;
}

function describeProblem(problem: AuditProblem, lines: number[]): string {
  if (problem.stream === undefined || problem.index === undefined) return problem.message;
  return `${problem.stream}#${problem.seq} (line ${lines[problem.index]}): ${problem.message}`;
}

function hasProblems(report: VerifyReport): boolean {
  return report.checks.some((check) => check.status === 'failed');
}

function parseCommandLine(argv: string[], sourceGiven = false): { command: string; options: ParsedOptions } {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const options = parsed.values as ParsedOptions;
  const [command, ...extra] = parsed.positionals;
  if (options.help || command === 'help') return { command: 'help', options };
  if (command === undefined) throw new UsageError('a command is needed: verify, export or replay');
  if (!(command in COMMAND_OPTIONS)) throw new UsageError(`unknown command '${command}'`);
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
  const allowed = new Set([...(sourceGiven ? [] : SOURCE_OPTIONS), ...COMMAND_OPTIONS[command]]);
  const misplaced = Object.keys(options).find((name) => !allowed.has(name));
  if (misplaced) throw new UsageError(`${command} does not take --${misplaced}`);
  return { command, options };
}

function sourceOf(options: ParsedOptions): AuditSource {
  const given = ['etcd', 'config', 'file'].filter((name) => options[name as keyof ParsedOptions] !== undefined);
  if (given.length !== 1) {
    throw new UsageError(
      given.length === 0
        ? 'a source is needed: --etcd with --scope, --config or --file'
        : `one source only, got --${given.join(' and --')}`,
    );
  }
  if (options.scope !== undefined && options.etcd === undefined) throw new UsageError('--scope goes with --etcd');
  if (options.namespace !== undefined && options.etcd === undefined)
    throw new UsageError('--namespace goes with --etcd');
  if (options.config !== undefined) return { kind: 'config', path: options.config };
  if (options.file !== undefined) return { kind: 'file', path: options.file };
  const hosts = options
    .etcd!.split(',')
    .map((host) => host.trim())
    .filter(Boolean);
  if (hosts.length === 0) throw new UsageError('--etcd needs host:port');
  if (!options.scope) throw new UsageError('--etcd needs --scope NAME');
  return {
    kind: 'etcd',
    hosts,
    scope: options.scope,
    namespace: normalizeNamespace(options.namespace ?? DEFAULT_NAMESPACE),
  };
}

function apiUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`--api: not a URL: '${value}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`--api: http or https only, got '${value}'`);
  return value.replace(/\/+$/, '');
}

function instantOption(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const instant = Date.parse(value);
  if (Number.isNaN(instant)) throw new UsageError(`--${name}: not an ISO 8601 time: '${value}'`);
  return instant;
}
