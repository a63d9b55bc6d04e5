import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CommandRunner } from './commands';
import { LocalPostgres } from './local-postgres';

/**
 * The password file PostgreSQL's tools read (PGPASSFILE). With `postgresql.pgpass` (as in almost every
 * Patroni configuration) it is that file, holding a line for every login the agent uses, so that one file
 * serves primary_conninfo (`passfile=`), pg_basebackup, pg_rewind and the bootstrap and replica scripts at
 * once, with no password in postgresql.conf or a process environment. Without it, a script gets a private
 * temporary file with its one login (withPassfile). Passwords never go on a command line.
 */
export async function writePassfile(
  local: LocalPostgres,
  commands: CommandRunner,
  user: string,
  password: string | undefined,
): Promise<string> {
  const configured = local.config.pgpass;
  if (configured) {
    await commands.writeOwnedFile(configured, passfileContent(agentLogins(local, { user, password })));
    return configured;
  }
  throw new Error('postgresql.pgpass is not set: a command gets a private password file from withPassfile');
}

/**
 * Runs a command with `login`'s password file: `postgresql.pgpass` when configured (kept, as Patroni keeps it),
 * else a private file made for this one command and removed once it ends, so that no password outlives it.
 */
export async function withPassfile<T>(
  local: LocalPostgres,
  commands: CommandRunner,
  login: Login,
  run: (passfile: string) => Promise<T>,
): Promise<T> {
  if (local.config.pgpass) return run(await writePassfile(local, commands, login.user, login.password));
  const dir = await mkdtemp(join(tmpdir(), 'stator-pgpass-'));
  try {
    await commands.chownToOsUser(dir);
    const passfile = join(dir, 'pgpass');
    await commands.writeOwnedFile(passfile, passfileContent([login]));
    return await run(passfile);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * How a PostgreSQL tool gets `user`'s password: PGPASSFILE when `postgresql.pgpass` is configured,
 * PGPASSWORD (never the command line) otherwise.
 */
export async function passwordEnvironment(
  local: LocalPostgres,
  commands: CommandRunner,
  user: string,
  password: string | undefined,
): Promise<Record<string, string>> {
  if (local.config.pgpass) return { PGPASSFILE: await writePassfile(local, commands, user, password) };
  return password === undefined ? {} : { PGPASSWORD: password };
}

export interface Login {
  user: string;
  password: string | undefined;
}

/** `first`, then the superuser, replication and rewind logins, one line per user (libpq takes the first match). */
export function agentLogins(local: LocalPostgres, first?: Login): Login[] {
  const logins: Login[] = first ? [first] : [];
  const rewind = local.rewindRole;
  for (const login of [
    { user: local.superuser, password: local.superuserPassword },
    { user: local.replicationUser, password: local.replicationPassword },
    { user: rewind.username, password: rewind.password },
  ]) {
    if (!logins.some((known) => known.user === login.user)) logins.push(login);
  }
  return logins;
}

/** `.pgpass` lines for any host, port and database: `*:*:*:user:password`, `:` and `\` escaped. */
export function passfileContent(logins: Login[]): string {
  return logins.map(({ user, password }) => `*:*:*:${pgpassField(user)}:${pgpassField(password ?? '')}\n`).join('');
}

function pgpassField(value: string): string {
  return value.replace(/[\\:]/g, (character) => `\\${character}`);
}
