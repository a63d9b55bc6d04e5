import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CommandRunner } from './commands';
import { LocalPostgres } from './local-postgres';

/**
 * The password file PostgreSQL's tools read (PGPASSFILE). With `postgresql.pgpass` (as in almost every
 * Patroni configuration) it is that file, holding a line for every login the agent uses, so that one file
 * serves primary_conninfo (`passfile=`), pg_basebackup, pg_rewind and the bootstrap and replica scripts at
 * once, with no password in postgresql.conf or a process environment. Without it, a private temporary file
 * holds the one login a script needs. Passwords never go on a command line.
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
  const passfile = join(await privateDirectory(local, commands), 'pgpass');
  await commands.writeOwnedFile(passfile, passfileContent([{ user, password }]));
  return passfile;
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

/** One private directory per agent, rewritten for each command: not one more per clone or rewind. */
const passfileDirectories = new WeakMap<LocalPostgres, Promise<string>>();

function privateDirectory(local: LocalPostgres, commands: CommandRunner): Promise<string> {
  let dir = passfileDirectories.get(local);
  if (!dir) {
    dir = (async () => {
      const made = await mkdtemp(join(tmpdir(), 'stator-pgpass-'));
      await commands.chownToOsUser(made);
      return made;
    })();
    passfileDirectories.set(local, dir);
    dir.catch(() => passfileDirectories.delete(local)); // a failed attempt is not remembered
  }
  return dir;
}
