import { CommandRunner } from './commands';

/** PostgreSQL's WAL segment file names: timeline, log and segment, 8 hex digits each. */
const WAL_FILE = /^[0-9A-F]{24}$/;

/**
 * `archive_command` with its placeholders replaced as PostgreSQL's archiver does for `walFile`: `%p` the
 * file's path relative to the data directory (the command runs there), `%f` its name, `%%` a percent sign.
 * `%r` has no meaning for the archiver; as Patroni, it becomes the first segment's name. Any other `%x` stays.
 */
export function archiverCommand(template: string, walFile: string): string {
  let command = '';
  for (let i = 0; i < template.length; i++) {
    const next = template[i + 1];
    if (template[i] !== '%' || next === undefined) {
      command += template[i];
      continue;
    }
    const replacement = { p: `pg_wal/${walFile}`, f: walFile, r: '000000010000000000000001', '%': '%' }[next];
    if (replacement === undefined) {
      command += '%';
      continue;
    }
    command += replacement;
    i++;
  }
  return command;
}

/**
 * Runs `archive_command` for one WAL file of a stopped server, as the OS user, in the data directory, through
 * the shell (as PostgreSQL runs it). Throws PostgresCommandError on a non-zero exit or past `timeoutMs`.
 */
export async function archiveWalFile(
  commands: CommandRunner,
  dataDir: string,
  template: string,
  walFile: string,
  timeoutMs: number,
): Promise<void> {
  if (!WAL_FILE.test(walFile)) throw new Error(`not a WAL file name: ${walFile}`);
  await commands.run('/bin/sh', ['-c', archiverCommand(template, walFile)], { cwd: dataDir, timeoutMs });
}
