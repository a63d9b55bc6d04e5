import { closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { PostmasterExitEvent } from '../fence/fence-protocol';
import { PostgresCommandError, PostmasterExit } from '../postgres.port';
import { STDERR_TAIL_CHARS, tail } from './commands';

/** The exit the fence recorded last (`<state_dir>/postmaster-exit.json`), or null when there is none. */
export function readExitRecord(exitFile: string): PostmasterExitEvent | null {
  try {
    return JSON.parse(readFileSync(exitFile, 'utf8')) as PostmasterExitEvent;
  } catch {
    return null;
  }
}

/** The end of `<state_dir>/postgresql.log` (it holds every postmaster life, so only the end is read). */
export function postmasterLogTail(postmasterLog: string): string {
  let fd: number | null = null;
  try {
    fd = openSync(postmasterLog, 'r');
    const size = fstatSync(fd).size;
    const length = Math.min(size, STDERR_TAIL_CHARS * 2);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    return tail(buffer.toString('utf8'));
  } catch {
    return '';
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

/** Why a start failed: the fence's error when it could not spawn the postmaster, else the end of its log. */
export function startFailure(
  exit: PostmasterExitEvent | PostmasterExit | null,
  postmasterLog: string,
): PostgresCommandError {
  const reason = exit && 'error' in exit && exit.error ? exit.error : postmasterLogTail(postmasterLog);
  return new PostgresCommandError(
    'postgres',
    exit?.code ?? null,
    reason || `postgres exited (signal ${exit?.signal ?? 'none'})`,
  );
}

/**
 * What a server in recovery answers the clients that try to connect meanwhile (the agent's own
 * monitoring among them): it says nothing of why the server stopped, and it would push the line that does out of the tail.
 */
const CLIENT_REFUSAL =
  /(FATAL|DETAIL):\s+(the database system is (not yet accepting connections|starting up|shutting down|in recovery mode)|Consistent recovery state has not been yet reached)/;

export function withLastLog(exit: PostmasterExit, postmasterLog: string): PostmasterExit {
  // A postmaster that exits with an error code says why in its log (a port in use, a bad parameter,
  // a timeline it cannot follow): the last few lines carry it to the agent's log.
  if (exit.requested || !exit.code) return exit;
  const lastLog = postmasterLogTail(postmasterLog)
    .split('\n')
    .filter((line) => !CLIENT_REFUSAL.test(line))
    .slice(-6)
    .join(' | ');
  return lastLog ? { ...exit, lastLog } : exit;
}

export function toPostmasterExit(exit: PostmasterExitEvent): PostmasterExit {
  return { pid: exit.pid, code: exit.code, signal: exit.signal, requested: exit.requested, fenced: exit.fenced };
}
