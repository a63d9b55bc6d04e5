import { chmod, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { splitCommandLine } from '../../common/command-line';
import { BootstrapMethod, CustomMethod, MethodOption } from '../../config/config.types';
import { methodFlag } from '../../config/custom-methods-config';
import { PostgresCommandError, ReplicaMethod, UpstreamNode } from '../postgres.port';
import { CommandRunner, tail } from './commands';
import { formatConninfo } from './configuration-files';
import { DataDirectory } from './data-directory';
import { withPassfile } from './passfile';
import { LocalPostgres } from './local-postgres';

/** Keys of a replica method that only steer Stator, dropped from the arguments with `no_params` (as the reference). */
const REPLICA_METHOD_FLAGS = ['no_params', 'no_leader', 'keep_data'];

/**
 * The user's own scripts that fill the data directory, called as the reference calls them: a custom
 * bootstrap (`bootstrap.<method>`) and custom replica methods (`postgresql.<name>`, e.g. a
 * pgBackRest or WAL-G restore). Each runs as the OS user, without a shell, within the data-copy deadline.
 */
export class CustomMethods {
  constructor(
    private readonly local: LocalPostgres,
    private readonly commands: CommandRunner,
    private readonly dataDirectory: DataDirectory,
    private readonly scope: string,
  ) {}

  async bootstrap(method: BootstrapMethod): Promise<void> {
    // As the reference: the data directory is the command's to create (a restore may copy a whole directory into place).
    await this.dataDirectory.ensureParentExists();
    const args = bootstrapArguments(method, this.scope, this.local.dataDir);
    await this.run('custom bootstrap', method, args, {});
    await this.expectCluster('custom bootstrap');
    // As the reference's _post_restore: no promote trigger left behind.
    await rm(join(this.local.dataDir, 'promote'), { force: true });
    if (!method.keep_existing_recovery_conf || method.recovery_conf) {
      // The first start writes recovery_conf with its own recovery.signal (ConfigurationFiles).
      await rm(join(this.local.dataDir, 'recovery.signal'), { force: true });
      await rm(join(this.local.dataDir, 'standby.signal'), { force: true });
    }
  }

  async createReplica(method: ReplicaMethod, source: UpstreamNode | null): Promise<void> {
    const keepData = methodFlag(method.options, 'keep_data');
    // As the reference: the method finds no data directory (a restore may copy a whole directory into place),
    // unless keep_data leaves it as it is.
    if (keepData) await this.dataDirectory.ensureExists();
    else await this.removeDataDirectory();
    const user = this.local.replicationUser;
    const connstring = source
      ? formatConninfo({
          host: source.host,
          port: source.port,
          user,
          dbname: 'postgres',
          ...this.local.replicationLibpq,
        })
      : '';
    const args = replicaMethodArguments(method, { scope: this.scope, datadir: this.local.dataDir, connstring });
    const runMethod = (env: Record<string, string>) => this.run(`replica method ${method.name}`, method, args, env);
    try {
      if (source) {
        const login = { user, password: this.local.replicationPassword };
        await withPassfile(this.local, this.commands, login, (passfile) => runMethod({ PGPASSFILE: passfile }));
      } else {
        await runMethod({});
      }
      await this.expectCluster(`replica method ${method.name}`);
    } catch (error) {
      if (!keepData) await this.removeDataDirectory();
      throw error;
    }
  }

  /** The data directory removed, its parent left in place (the method, run as the OS user, creates it). */
  private async removeDataDirectory(): Promise<void> {
    await this.dataDirectory.remove(null);
    await this.dataDirectory.ensureParentExists();
  }

  private async run(what: string, method: CustomMethod, args: string[], env: Record<string, string>): Promise<void> {
    const words = splitCommandLine(method.command);
    if (!words || words.length === 0)
      throw new PostgresCommandError(what, null, `cannot split ${JSON.stringify(method.command)} into a command line`);
    const [file, ...given] = words;
    const result = await this.commands.run(file, [...given, ...args], {
      env: { PGDATA: this.local.dataDir, ...env },
      allowFailure: true,
      timeoutMs: this.commands.deadline('dataCopy'),
    });
    if (result.code !== 0) {
      throw new PostgresCommandError(
        what,
        result.code,
        tail(result.stderr || result.stdout) || `${file} exited with code ${result.code ?? result.signal}`,
      );
    }
  }

  private async expectCluster(what: string): Promise<void> {
    const info = await this.dataDirectory.inspect();
    if (info.state !== 'initialized' || !info.systemIdentifier) {
      throw new PostgresCommandError(what, 0, `the command did not leave a cluster in ${this.local.dataDir}`);
    }
    await chmod(this.local.dataDir, 0o700);
  }
}

/** `--scope` and `--datadir` unless `no_params`, then the section's other keys (the reference's order). */
export function bootstrapArguments(method: CustomMethod, scope: string, datadir: string): string[] {
  const standard = method.no_params ? [] : [`--scope=${scope}`, `--datadir=${datadir}`];
  return [...standard, ...Object.entries(method.options).map(([key, value]) => `--${key}=${pythonValue(value)}`)];
}

/**
 * The section's keys, then `scope`, `role`, `datadir`, `connstring` (a key the user set keeps its place
 * and takes the standard value, as Python's dict.update); with `no_params` only the user's own keys.
 */
export function replicaMethodArguments(
  method: CustomMethod,
  standard: { scope: string; datadir: string; connstring: string },
): string[] {
  const options: Record<string, MethodOption> = method.no_params
    ? Object.fromEntries(Object.entries(method.options).filter(([key]) => !REPLICA_METHOD_FLAGS.includes(key)))
    : {
        ...method.options,
        scope: standard.scope,
        role: 'replica',
        datadir: standard.datadir,
        connstring: standard.connstring,
      };
  return Object.entries(options).map(([key, value]) => `--${key}=${pythonValue(value)}`);
}

/** Values as the reference formats them (`str()` in Python): True, False, 5, text. */
function pythonValue(value: MethodOption): string {
  if (value === true) return 'True';
  if (value === false) return 'False';
  return String(value);
}
