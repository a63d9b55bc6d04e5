import { spawn } from 'node:child_process';
import { chown, rename, writeFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { PostgresqlConfig } from '../../config/config.types';
import { PostgresCommandError } from '../postgres.port';

export interface OsUser {
  uid: number;
  gid: number;
  home: string;
}

export interface CommandOptions {
  env?: Record<string, string>;
  /** Text for stdin; without it stdin is /dev/null. */
  input?: string;
  cwd?: string;
  /** Return the result instead of throwing on a non-zero exit. */
  allowFailure?: boolean;
  /** Run as the invoking user even when root (e.g. `id`, `getent`). */
  asAgentUser?: boolean;
  /** Past this the command is killed (SIGTERM, SIGKILL 5 s later) and fails. Default COMMAND_DEADLINES_MS.short. */
  timeoutMs?: number;
}

export interface CommandResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Deadlines of the binaries the adapter runs. A clone or a restored backup takes as long as the data
 * is large, so their deadline only catches a command that hangs for good; the others are bounded by
 * what they do.
 */
export const COMMAND_DEADLINES_MS = Object.freeze({
  short: 30_000, // pg_controldata, pg_ctl promote, getent
  initdb: 10 * 60_000,
  rewindOrRecovery: 60 * 60_000, // pg_rewind, single-user crash recovery
  dataCopy: 24 * 60 * 60_000, // pg_basebackup, a custom bootstrap script
});
export type CommandDeadline = keyof typeof COMMAND_DEADLINES_MS;

/** Between SIGTERM and SIGKILL of a command past its deadline. */
const COMMAND_KILL_GRACE_MS = 5_000;
/** Where pg_rewind and pg_basebackup keep their output tail in errors. */
export const STDERR_TAIL_CHARS = 2000;

/** The end of a command's output or of a log, as errors carry it. */
export function tail(text: string): string {
  return text.trim().slice(-STDERR_TAIL_CHARS);
}

/**
 * Runs PostgreSQL's binaries and writes its files. When the agent runs as root, every binary runs as
 * `config.os_user` (spawn uid/gid), and every file written belongs to that user.
 */
export class CommandRunner {
  private osUserLookup: Promise<OsUser | null> | null = null;

  constructor(
    private readonly config: PostgresqlConfig,
    private readonly deadlinesMs: Partial<Record<CommandDeadline, number>> = {},
  ) {}

  /** The uid/gid/home of `os_user` when the agent runs as root; null otherwise (run as ourselves). */
  osUser(): Promise<OsUser | null> {
    if (!this.osUserLookup) {
      this.osUserLookup = (async () => {
        if (process.getuid?.() !== 0) return null;
        const name = this.config.os_user || 'postgres';
        const result = await this.run('getent', ['passwd', name], { asAgentUser: true, allowFailure: true });
        const fields = result.stdout.trim().split(':');
        if (result.code !== 0 || fields.length < 6) {
          throw new Error(`OS user ${name} not found: PostgreSQL cannot run as root (see scripts/ensure-pg-user.sh)`);
        }
        return { uid: Number(fields[2]), gid: Number(fields[3]), home: fields[5] };
      })();
      this.osUserLookup.catch(() => (this.osUserLookup = null));
    }
    return this.osUserLookup;
  }

  async chownToOsUser(path: string): Promise<void> {
    const user = await this.osUser();
    if (user) await chown(path, user.uid, user.gid);
  }

  /** Writes via a temporary file and rename, owned by the OS user, mode 0600. */
  async writeOwnedFile(path: string, content: string | Uint8Array): Promise<void> {
    const temporary = `${path}.stator-tmp`;
    await writeFile(temporary, content, { mode: 0o600 });
    await this.chownToOsUser(temporary);
    await rename(temporary, path);
  }

  /** The environment of PostgreSQL binaries: the agent's, without libpq variables, HOME of the OS user. */
  childEnv(osUser: OsUser | null, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = {};
    for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('PG')) env[key] = value;
    if (osUser) {
      env.HOME = osUser.home;
      env.USER = env.LOGNAME = this.config.os_user || 'postgres';
    }
    return { ...env, ...extra };
  }

  deadline(kind: CommandDeadline): number {
    return this.deadlinesMs[kind] ?? COMMAND_DEADLINES_MS[kind];
  }

  /** Runs a binary (as the OS user unless `asAgentUser`) and collects its output; throws PostgresCommandError on failure. */
  async run(file: string, args: string[], options: CommandOptions = {}): Promise<CommandResult> {
    const osUser = options.asAgentUser ? null : await this.osUser();
    const commandName = basename(file) === 'sh' ? `${file} -c` : `${basename(file)} ${args[0] ?? ''}`.trim();
    const result = await new Promise<CommandResult>((resolveRun, rejectRun) => {
      const child = spawn(file, args, {
        cwd: options.cwd ?? (osUser ? '/' : undefined),
        env: options.asAgentUser ? process.env : this.childEnv(osUser, options.env),
        stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
        uid: osUser?.uid,
        gid: osUser?.gid,
      });
      let stdout = '';
      let stderr = '';
      // Keep only the tails: pg_basebackup or initdb may be chatty.
      child.stdout?.on('data', (chunk: Buffer) => (stdout = (stdout + chunk.toString()).slice(-65536)));
      child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-65536)));
      const timeoutMs = options.timeoutMs ?? this.deadline('short');
      let killTimer: NodeJS.Timeout | undefined;
      const deadline = setTimeout(() => {
        stderr += `\n${commandName} did not finish within ${Math.round(timeoutMs / 1000)} s: killed`;
        child.kill('SIGTERM');
        killTimer = setTimeout(() => child.kill('SIGKILL'), COMMAND_KILL_GRACE_MS);
      }, timeoutMs);
      const settle = () => {
        clearTimeout(deadline);
        clearTimeout(killTimer);
      };
      child.once('error', (error) => {
        settle();
        rejectRun(new PostgresCommandError(commandName, null, error.message));
      });
      child.once('close', (code, signal) => {
        settle();
        resolveRun({ code, signal, stdout, stderr });
      });
      if (options.input !== undefined) {
        child.stdin?.on('error', () => undefined); // the child may exit before reading everything
        child.stdin?.end(options.input);
      }
    });
    if (result.code !== 0 && !options.allowFailure) {
      throw new PostgresCommandError(
        commandName,
        result.code,
        tail(result.stderr || result.stdout) || `killed by ${result.signal}`,
      );
    }
    return result;
  }
}
