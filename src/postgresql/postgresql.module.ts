import { Module } from '@nestjs/common';
import { COMPONENT_LOGGERS, componentLogger, Logger } from '../common/logger';
import { LOGGER, POSTGRES_PROCESS, POSTGRES_QUERY, STATOR_CONFIG } from '../common/tokens';
import { StatorConfig } from '../config/config.types';
import { PgQuery } from './pg-query';
import { PostgresProcess, PostgresQuery } from './postgres.port';
import { defaultFenceProgram } from './process/fence-program';
import { RealPostgresProcess } from './real-postgres-process';

/** The PostgreSQL ports: the server's processes and files, and SQL on it. */
@Module({
  providers: [
    {
      provide: POSTGRES_PROCESS,
      inject: [STATOR_CONFIG, LOGGER],
      useFactory: (config: StatorConfig, nodeLogger: Logger): PostgresProcess => {
        const logger = componentLogger(nodeLogger, COMPONENT_LOGGERS.postgresql);
        return new RealPostgresProcess({
          name: config.name,
          scope: config.scope,
          config: config.postgresql,
          stateDir: config.state_dir,
          initdbOptions: config.bootstrap.initdb,
          postBootstrapCommand: config.bootstrap.post_bootstrap,
          fence: defaultFenceProgram(config.fence.python),
          log: (level, message) => (level === 'warning' ? logger.warning(message) : logger.info(message)),
        });
      },
    },
    {
      provide: POSTGRES_QUERY,
      inject: [STATOR_CONFIG],
      useFactory: (config: StatorConfig): PostgresQuery => PgQuery.fromConfig(config.postgresql),
    },
  ],
  exports: [POSTGRES_PROCESS, POSTGRES_QUERY],
})
export class PostgresqlModule {}
