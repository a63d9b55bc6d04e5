import { existsSync, readFileSync } from 'node:fs';
import { copyFile, mkdir, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { errorText } from '../../common/error-text';
import { decidedByStator } from '../../config/dynamic-files-config';
import { withVersionNames } from '../parameter-renames';
import { PostgresSettings } from '../postgres.port';
import { withoutRecoveryParameters } from './auto-conf';
import { controlDataMinimums, raisedSettingLine, raiseToControlData } from '../hot-standby-minimums';
import { CommandRunner } from './commands';
import { ControlDataReader } from './control-data';
import { AdapterLog, LocalPostgres } from './local-postgres';
import { writePassfile } from './passfile';

/** Marks the postgresql.conf Stator writes, so a later configure knows initdb's own file is already moved aside. */
const STATOR_CONF_MARKER = '# Written by Stator';

const BASE_CONF = 'postgresql.base.conf';

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
  'ident_file',
  'listen_addresses',
  'port',
  'primary_conninfo',
  'primary_slot_name',
  'recovery_target_timeline',
]);

/**
 * postgresql.conf, pg_hba.conf and pg_ident.conf in the configuration directory (`postgresql.config_dir`, else the
 * data directory), and standby.signal in the data directory, as Stator writes them.
 */
export class ConfigurationFiles {
  /** The settings last raised to pg_control's values, so the log says it once per change. */
  private raisedLogged = '';

  constructor(
    private readonly local: LocalPostgres,
    private readonly commands: CommandRunner,
    private readonly log?: AdapterLog,
    private readonly controlData = new ControlDataReader(local, commands),
  ) {}

  /**
   * Stator owns postgresql.conf. It includes first the user's `custom_conf`, or else `postgresql.base.conf`: the
   * first time, the postgresql.conf found in the configuration directory (initdb's, or a Debian cluster's) becomes
   * that file, as with Patroni; with a separate configuration directory and no file there, the data directory's base
   * file or initdb's postgresql.conf is copied. Then come Stator's defaults, a replica's `recovery_conf`, the
   * parameters (which may override both), and the parameters only Stator decides (listen, port, hba_file, the upstream).
   * pg_hba.conf comes from `pg_hba` or a default; pg_ident.conf from `pg_ident`; standby.signal exists iff replica.
   * Recovery settings in postgresql.auto.conf (a restore's restore_command) are removed, as Patroni does, unless a
   * custom bootstrap keeps its own recovery (`keep_existing_recovery_conf`).
   */
  async write(settings: PostgresSettings): Promise<void> {
    const dataDir = this.local.dataDir;
    const configDir = this.local.configDir;
    if (!existsSync(configDir)) {
      // Parents as /etc/postgresql is (0755: PostgreSQL's user must pass through); the directory itself is that user's.
      await mkdir(dirname(configDir), { recursive: true, mode: 0o755 });
      await mkdir(configDir, { mode: 0o700 });
      await this.commands.chownToOsUser(configDir);
    }
    if (!this.local.config.custom_conf) await this.keepBaseConf();
    // primary_conninfo names postgresql.pgpass (as Patroni writes it) rather than carrying the password: the file must hold it first.
    if (this.local.config.pgpass && settings.role === 'replica' && settings.upstream?.host) {
      await writePassfile(this.local, this.commands, this.local.replicationUser, this.local.replicationPassword);
    }
    const inRecovery =
      settings.role === 'replica' || Boolean(settings.recovery) || Boolean(settings.keepExistingRecoveryConf);
    const minimums = inRecovery ? await this.controlDataMinimums() : {};
    await this.commands.writeOwnedFile(this.local.configFile, this.renderPostgresqlConf(settings, minimums));
    if (!settings.keepExistingRecoveryConf) await this.removeAutoConfRecovery();
    await this.commands.writeOwnedFile(join(configDir, 'pg_hba.conf'), this.renderHba(settings));
    const identLines = settings.pgIdent?.length ? settings.pgIdent : (this.local.config.pg_ident ?? []);
    const identPath = join(configDir, 'pg_ident.conf');
    // As Patroni: the file is written from `pg_ident` when given and left alone otherwise (it must exist, though).
    if (!this.userIdentFile(settings) && (identLines.length || !existsSync(identPath))) {
      await this.commands.writeOwnedFile(identPath, renderLines('postgresql.pg_ident', identLines));
    }
    const standbySignal = join(dataDir, 'standby.signal');
    if (settings.role === 'replica') await this.commands.writeOwnedFile(standbySignal, '');
    else await rm(standbySignal, { force: true });
    // PostgreSQL removes recovery.signal itself once the recovery ends.
    if (settings.role === 'primary' && settings.recovery)
      await this.commands.writeOwnedFile(join(dataDir, 'recovery.signal'), '');
  }

  /** PostgreSQL reads postgresql.auto.conf last: a recovery setting left there would override the one Stator writes. */
  private async removeAutoConfRecovery(): Promise<void> {
    const path = join(this.local.dataDir, 'postgresql.auto.conf');
    if (!existsSync(path)) return;
    try {
      const sanitized = withoutRecoveryParameters(await readFile(path, 'utf8'));
      if (!sanitized) return;
      await this.commands.writeOwnedFile(path, sanitized.text);
      this.log?.(
        'info',
        `removed ${sanitized.removed.join(', ')} from ${path}: Stator writes the recovery settings into postgresql.conf`,
      );
    } catch (error) {
      // As the reference: the server still starts; what the file sets is what PostgreSQL will use.
      this.log?.('warning', `could not remove the recovery settings from ${path}: ${errorText(error)}`);
    }
  }

  /** The first time: the postgresql.conf Stator found becomes postgresql.base.conf (included first). */
  private async keepBaseConf(): Promise<void> {
    const basePath = join(this.local.configDir, BASE_CONF);
    if (existsSync(basePath)) return;
    const confPath = this.local.configFile;
    if (existsSync(confPath) && !(await readFile(confPath, 'utf8')).startsWith(STATOR_CONF_MARKER)) {
      await rename(confPath, basePath);
      return;
    }
    if (confPath === join(this.local.dataDir, 'postgresql.conf')) return;
    // A separate configuration directory: the data directory's base file (a base backup of a node that keeps its files
    // there), else initdb's own postgresql.conf.
    const fromDataDir = [join(this.local.dataDir, BASE_CONF), join(this.local.dataDir, 'postgresql.conf')];
    for (const candidate of fromDataDir) {
      if (existsSync(candidate) && !(await readFile(candidate, 'utf8')).startsWith(STATOR_CONF_MARKER)) {
        await copyFile(candidate, basePath);
        await this.commands.chownToOsUser(basePath);
        return;
      }
    }
  }

  /** `ident_file` from the parameters: the user manages that file (Patroni then leaves `pg_ident` unwritten). */
  private userIdentFile(settings: PostgresSettings): string | undefined {
    const given = settings.parameters.ident_file ?? this.local.config.parameters.ident_file;
    return typeof given === 'string' && given ? resolve(this.local.configDir, given) : undefined;
  }

  /** What pg_control says the WAL's primary ran with; nothing before the data directory holds a cluster. */
  private async controlDataMinimums(): Promise<Record<string, number>> {
    if (!existsSync(join(this.local.dataDir, 'global', 'pg_control'))) return {};
    try {
      return controlDataMinimums(await this.controlData.read());
    } catch (error) {
      // The configured values are written; if they are too low, PostgreSQL's own start error says which.
      this.log?.(
        'warning',
        `pg_controldata failed, writing the configured max_connections and the like unchanged: ${errorText(error)}`,
      );
      return {};
    }
  }

  private renderPostgresqlConf(settings: PostgresSettings, controlMinimums: Record<string, number> = {}): string {
    const { hosts, port } = parseListen(this.local.config.listen);
    const parameters: Record<string, string | number | boolean> = { ...DEFAULT_PARAMETERS };
    // A replica's recovery_conf first: a restore_command in the parameters or standby_cluster's wins, as with Patroni.
    const recoveryConf =
      settings.role === 'replica' ? withoutDecided(settings.recoveryConf ?? this.local.config.recovery_conf ?? {}) : {};
    const given = withVersionNames(
      { ...recoveryConf, ...this.local.config.parameters, ...settings.parameters },
      this.majorVersion(),
    );
    for (const [name, value] of Object.entries(given)) {
      if (!STATOR_OWNED_PARAMETERS.has(name)) parameters[name] = value;
    }
    const raised = raiseToControlData(parameters, controlMinimums);
    const raisedText = raised.map(raisedSettingLine).join('\n');
    if (raisedText !== this.raisedLogged) for (const setting of raised) this.log?.('info', raisedSettingLine(setting));
    this.raisedLogged = raisedText;
    parameters.listen_addresses = hosts.join(',');
    parameters.port = port;
    parameters.hba_file = join(this.local.configDir, 'pg_hba.conf');
    parameters.ident_file = this.userIdentFile(settings) ?? join(this.local.configDir, 'pg_ident.conf');
    parameters.recovery_target_timeline = 'latest';
    // A replica that reached a recovery target (set in an included file, say) would pause, promote or shut down: as Patroni,
    // none. Written for every role: PostgreSQL flags a restart as pending when a line of these (even unchanged) goes away.
    Object.assign(parameters, NO_RECOVERY_TARGET);
    if (settings.role === 'primary' && settings.recovery) Object.assign(parameters, settings.recovery);
    // An upstream without a host is an archive-only standby cluster's remote: WAL comes by restore_command alone.
    if (settings.role === 'replica' && settings.upstream?.host) {
      parameters.primary_conninfo = formatConninfo({
        host: settings.upstream.host,
        port: settings.upstream.port,
        user: this.local.replicationUser,
        ...(this.local.config.pgpass
          ? { passfile: this.local.config.pgpass }
          : { password: this.local.replicationPassword }),
        application_name: this.local.name,
        connect_timeout: 2,
        ...this.local.replicationLibpq,
      });
      if (settings.slotName) parameters.primary_slot_name = settings.slotName;
    }
    const customConf = this.local.config.custom_conf;
    const lines = [
      `${STATOR_CONF_MARKER}: every change here is overwritten. Local settings belong in ${customConf ?? BASE_CONF}`,
      '# (included first) or in the postgresql.parameters / dynamic configuration.',
      // The user's own file must be there (checked at start); the base file may not be (a data directory restored without it).
      customConf ? `include ${formatParameterValue(customConf)}` : `include_if_exists '${BASE_CONF}'`,
    ];
    for (const [name, value] of Object.entries(parameters))
      lines.push(`${checkParameterName(name)} = ${formatParameterValue(value)}`);
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

  private renderHba(settings: PostgresSettings): string {
    const given = settings.pgHba?.length ? settings.pgHba : this.local.config.pg_hba;
    if (given.length) return renderLines('postgresql.pg_hba', given);
    const defaults = [
      'local all all trust',
      'local replication all trust',
      // Password (SCRAM) from any address PostgreSQL listens on: replicas in other hosts or containers must reach it.
      'host all all all scram-sha-256',
      `host replication ${quoteHbaName(this.local.replicationUser)} all scram-sha-256`,
    ];
    // bootstrap.pg_hba: Patroni appends it to initdb's file when no pg_hba is set; here, to Stator's default lines.
    return renderLines('postgresql.pg_hba (default) and bootstrap.pg_hba', [
      ...defaults,
      ...(settings.bootstrapHba ?? []),
    ]);
  }
}

/** A file of lines (pg_hba.conf, pg_ident.conf) headed by where they come from. */
export function renderLines(source: string, lines: readonly string[]): string {
  return `# Written by Stator from ${source}: every change here is overwritten.\n${lines.map((line) => line.replace(/[\r\n]/g, ' ')).join('\n')}\n`;
}

const NO_RECOVERY_TARGET = {
  recovery_target: '',
  recovery_target_name: '',
  recovery_target_time: '',
  recovery_target_xid: '',
  recovery_target_lsn: '',
};

function withoutDecided(
  settings: Record<string, string | number | boolean>,
): Record<string, string | number | boolean> {
  return Object.fromEntries(Object.entries(settings).filter(([name]) => !decidedByStator(name)));
}

/** `host[,host...]:port` → listen_addresses and port. */
function parseListen(listen: string): { hosts: string[]; port: number } {
  const separator = listen.lastIndexOf(':');
  const port = Number(listen.slice(separator + 1));
  if (separator < 0 || !Number.isInteger(port) || port <= 0 || port > 65535)
    throw new Error(`postgresql.listen must be host:port, got ${listen}`);
  const hosts = listen
    .slice(0, separator)
    .split(',')
    .map((host) => host.trim().replace(/^\[|\]$/g, ''))
    .filter(Boolean);
  return { hosts: hosts.length ? hosts : ['localhost'], port };
}

function checkParameterName(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_.]*$/.test(name))
    throw new Error(`invalid PostgreSQL parameter name: ${JSON.stringify(name)}`);
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
