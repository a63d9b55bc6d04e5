import { existsSync, readFileSync } from 'node:fs';
import { readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { withVersionNames } from '../parameter-renames';
import { PostgresSettings } from '../postgres.port';
import { CommandRunner } from './commands';
import { LocalPostgres } from './local-postgres';
import { writePassfile } from './passfile';

/** Marks the postgresql.conf Stator writes, so a later configure knows initdb's own file is already moved aside. */
const STATOR_CONF_MARKER = '# Written by Stator';

/** Parameters Stator sets unless the configuration says otherwise. */
const DEFAULT_PARAMETERS: Record<string, string | number | boolean> = {
  wal_level: 'replica',
  hot_standby: true,
  wal_log_hints: true,
  max_wal_senders: 10,
  max_replication_slots: 10,
  wal_keep_size: '128MB',
  unix_socket_directories: '/tmp',
};

/** Parameters only Stator decides; values for them in the configuration are ignored. */
const STATOR_OWNED_PARAMETERS = new Set([
  'data_directory',
  'config_file',
  'hba_file',
  'listen_addresses',
  'port',
  'primary_conninfo',
  'primary_slot_name',
  'recovery_target_timeline',
]);

/** postgresql.conf, pg_hba.conf and standby.signal in the data directory, as Stator writes them. */
export class ConfigurationFiles {
  constructor(
    private readonly local: LocalPostgres,
    private readonly commands: CommandRunner,
  ) {}

  /**
   * Stator owns postgresql.conf. The first time, initdb's file becomes `postgresql.base.conf` (as with
   * Patroni) and is included first; then come Stator's defaults, `settings.parameters` (which may override
   * the defaults), and the parameters only Stator decides (listen, port, hba_file, the upstream).
   * pg_hba.conf comes from `postgresql.pg_hba` or a loopback default; standby.signal exists iff replica.
   */
  async write(settings: PostgresSettings): Promise<void> {
    const dataDir = this.local.dataDir;
    const confPath = join(dataDir, 'postgresql.conf');
    const basePath = join(dataDir, 'postgresql.base.conf');
    if (!existsSync(basePath) && existsSync(confPath)) {
      const current = await readFile(confPath, 'utf8');
      if (!current.startsWith(STATOR_CONF_MARKER)) await rename(confPath, basePath);
    }
    // primary_conninfo names postgresql.pgpass (as Patroni writes it) rather than carrying the password: the file must hold it first.
    if (this.local.config.pgpass && settings.role === 'replica' && settings.upstream?.host) {
      await writePassfile(this.local, this.commands, this.local.replicationUser, this.local.replicationPassword);
    }
    await this.commands.writeOwnedFile(confPath, this.renderPostgresqlConf(settings));
    await this.commands.writeOwnedFile(join(dataDir, 'pg_hba.conf'), this.renderHba());
    const standbySignal = join(dataDir, 'standby.signal');
    if (settings.role === 'replica') await this.commands.writeOwnedFile(standbySignal, '');
    else await rm(standbySignal, { force: true });
    // PostgreSQL removes recovery.signal itself once the recovery ends.
    if (settings.role === 'primary' && settings.recovery) await this.commands.writeOwnedFile(join(dataDir, 'recovery.signal'), '');
  }

  private renderPostgresqlConf(settings: PostgresSettings): string {
    const { hosts, port } = parseListen(this.local.config.listen);
    const parameters: Record<string, string | number | boolean> = { ...DEFAULT_PARAMETERS };
    const given = withVersionNames({ ...this.local.config.parameters, ...settings.parameters }, this.majorVersion());
    for (const [name, value] of Object.entries(given)) {
      if (!STATOR_OWNED_PARAMETERS.has(name)) parameters[name] = value;
    }
    parameters.listen_addresses = hosts.join(',');
    parameters.port = port;
    parameters.hba_file = join(this.local.dataDir, 'pg_hba.conf');
    parameters.recovery_target_timeline = 'latest';
    if (settings.role === 'primary' && settings.recovery) Object.assign(parameters, settings.recovery);
    // An upstream without a host is an archive-only standby cluster's remote: WAL comes by restore_command alone.
    if (settings.role === 'replica' && settings.upstream?.host) {
      parameters.primary_conninfo = formatConninfo({
        host: settings.upstream.host,
        port: settings.upstream.port,
        user: this.local.replicationUser,
        ...(this.local.config.pgpass ? { passfile: this.local.config.pgpass } : { password: this.local.replicationPassword }),
        application_name: this.local.name,
        connect_timeout: 2,
        ...this.local.replicationLibpq,
      });
      if (settings.slotName) parameters.primary_slot_name = settings.slotName;
    }
    const lines = [
      `${STATOR_CONF_MARKER}: every change here is overwritten. Local settings belong in postgresql.base.conf`,
      '# (included first) or in the postgresql.parameters / dynamic configuration.',
      "include_if_exists 'postgresql.base.conf'",
    ];
    for (const [name, value] of Object.entries(parameters)) lines.push(`${checkParameterName(name)} = ${formatParameterValue(value)}`);
    return lines.join('\n') + '\n';
  }

  /** The data directory's PostgreSQL major version (its PG_VERSION file); 15, the version installed here, before initdb. */
  private majorVersion(): number {
    try {
      return Number.parseInt(readFileSync(join(this.local.dataDir, 'PG_VERSION'), 'utf8'), 10) || 15;
    } catch {
      return 15;
    }
  }

  private renderHba(): string {
    const lines = this.local.config.pg_hba?.length
      ? this.local.config.pg_hba
      : [
          'local all all trust',
          'local replication all trust',
          // Password (SCRAM) from any address PostgreSQL listens on: replicas in other hosts or containers must reach it.
          'host all all all scram-sha-256',
          `host replication ${quoteHbaName(this.local.replicationUser)} all scram-sha-256`,
        ];
    return `# Written by Stator from postgresql.pg_hba.\n${lines.join('\n')}\n`;
  }
}

/** `host[,host...]:port` → listen_addresses and port. */
function parseListen(listen: string): { hosts: string[]; port: number } {
  const separator = listen.lastIndexOf(':');
  const port = Number(listen.slice(separator + 1));
  if (separator < 0 || !Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`postgresql.listen must be host:port, got ${listen}`);
  const hosts = listen
    .slice(0, separator)
    .split(',')
    .map((host) => host.trim().replace(/^\[|\]$/g, ''))
    .filter(Boolean);
  return { hosts: hosts.length ? hosts : ['localhost'], port };
}

function checkParameterName(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_.]*$/.test(name)) throw new Error(`invalid PostgreSQL parameter name: ${JSON.stringify(name)}`);
  return name;
}

/** A postgresql.conf value: booleans as on/off, numbers bare, strings quoted (`'` doubled, `\` escaped). */
export function formatParameterValue(value: string | number | boolean): string {
  if (typeof value === 'boolean') return value ? 'on' : 'off';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`invalid parameter value ${value}`);
    return String(value);
  }
  if (/[\n\r]/.test(value)) throw new Error('a parameter value cannot contain a line break');
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

/** libpq conninfo; values quoted when they need it. Undefined values are left out. */
export function formatConninfo(parameters: Record<string, string | number | undefined>): string {
  return Object.entries(parameters)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => {
      const text = String(value);
      const safe = text !== '' && /^[^\s'\\]+$/.test(text);
      return `${key}=${safe ? text : `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`}`;
    })
    .join(' ');
}

function quoteHbaName(name: string): string {
  return /^[A-Za-z0-9_]+$/.test(name) ? name : `"${name.replace(/"/g, '')}"`;
}
