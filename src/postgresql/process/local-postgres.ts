import { join, resolve } from 'node:path';
import { LibpqOptions, PostgresqlConfig, PostgresRole } from '../../config/config.types';
import { PgProgram, programPath } from '../../config/postgresql-programs-config';
import { localConnection, LocalConnection } from '../local-connection';

/** Diagnostics of the adapter (fence lost, escalations). */
export type AdapterLog = (level: 'info' | 'warning', message: string) => void;

export interface LocalPostgresOptions {
  /** This member's name: `application_name` in `primary_conninfo`, so the upstream's pg_stat_replication shows it. */
  name: string;
  config: PostgresqlConfig;
  /** Default: `config.authentication.superuser.password`. */
  superuserPassword?: string;
  /** Default: `config.authentication.replication.username`. */
  replicationUser?: string;
  /** Default: `config.authentication.replication.password`. */
  replicationPassword?: string;
}

/**
 * This node's PostgreSQL as every part of the adapter sees it: where its data and binaries are and
 * which roles it logs in as.
 */
export class LocalPostgres {
  readonly config: PostgresqlConfig;

  constructor(private readonly options: LocalPostgresOptions) {
    this.config = options.config;
  }

  get name(): string {
    return this.options.name;
  }

  get dataDir(): string {
    return resolve(this.config.data_dir);
  }

  /** Where postgresql.conf, pg_hba.conf and pg_ident.conf are (`postgresql.config_dir`, else the data directory). */
  get configDir(): string {
    return resolve(this.config.config_dir || this.config.data_dir);
  }

  /** The postgresql.conf PostgreSQL reads. */
  get configFile(): string {
    return join(this.configDir, 'postgresql.conf');
  }

  get superuser(): string {
    return this.config.authentication.superuser.username;
  }

  get superuserPassword(): string | undefined {
    return this.options.superuserPassword ?? this.config.authentication.superuser.password;
  }

  get replicationUser(): string {
    return this.options.replicationUser ?? this.config.authentication.replication.username;
  }

  get replicationPassword(): string | undefined {
    return this.options.replicationPassword ?? this.config.authentication.replication.password;
  }

  /** The replication role's libpq options (TLS client certificates) for primary_conninfo and pg_basebackup. */
  get replicationLibpq(): LibpqOptions {
    return this.config.authentication.replication.libpq ?? {};
  }

  /** pg_rewind's login: the `rewind` role when configured, else the superuser. */
  get rewindRole(): PostgresRole {
    const { rewind, superuser } = this.config.authentication;
    return rewind ?? { ...superuser, password: this.superuserPassword };
  }

  /** Where `program` is: `bin_dir`, or what `bin_name` maps it to (a wrapper, a renamed binary). */
  binary(program: PgProgram): string {
    return resolve(programPath(this.config, program));
  }

  /** The superuser's connection to this server. */
  localConnection(): LocalConnection {
    return { ...localConnection(this.config), password: this.superuserPassword };
  }
}
