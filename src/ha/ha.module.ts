import { DynamicModule, Module } from '@nestjs/common';
import { TimerClock } from '../common/clock';
import { COMPONENT_LOGGERS, componentLogger, Logger } from '../common/logger';
import {
  CLOCK,
  DCS,
  EVENT_LOG,
  EVENT_RECORDER,
  LOGGER,
  POSTGRES_PROCESS,
  POSTGRES_QUERY,
  STATOR_CONFIG,
} from '../common/tokens';
import { StatorConfig } from '../config/config.types';
import { DcsModule } from '../dcs/dcs.module';
import { Dcs } from '../dcs/dcs.port';
import { EventLog } from '../events/event-log';
import { EventRecorder } from '../events/event-recorder';
import { EventsModule } from '../events/events.module';
import { PostgresqlModule } from '../postgresql/postgresql.module';
import { PostgresProcess, PostgresQuery } from '../postgresql/postgres.port';
import { STATOR_RUNTIME, STATOR_VERSION } from '../version';
import { HaNode } from './ha-node';
import { NODE_DIAGNOSTICS, nodeDiagnosticsSource } from './node-diagnostics';

export interface HaModuleOptions {
  /** Reads the configuration file again (POST /reload, SIGHUP). */
  reloadConfig?: () => StatorConfig;
  /** A condition the node cannot go on from (a failed bootstrap). */
  onFatal: (reason: string) => void;
}

/** The node's HA actors: the cycle and the machines it drives, over the DCS, PostgreSQL and events ports. */
@Module({})
export class HaModule {
  static forRoot({ reloadConfig, onFatal }: HaModuleOptions): DynamicModule {
    return {
      module: HaModule,
      imports: [DcsModule, PostgresqlModule, EventsModule],
      providers: [
        {
          provide: HaNode,
          inject: [STATOR_CONFIG, DCS, POSTGRES_PROCESS, POSTGRES_QUERY, EVENT_RECORDER, EVENT_LOG, CLOCK, LOGGER],
          useFactory: (
            config: StatorConfig,
            dcs: Dcs,
            pg: PostgresProcess,
            query: PostgresQuery,
            events: EventRecorder,
            eventLog: EventLog,
            clock: TimerClock,
            logger: Logger,
          ) =>
            new HaNode({
              config,
              dcs,
              pg,
              query,
              events,
              eventLog,
              clock,
              logger: componentLogger(logger, COMPONENT_LOGGERS.ha),
              verdictLogger: componentLogger(logger, COMPONENT_LOGGERS.cycle),
              version: STATOR_VERSION,
              runtime: STATOR_RUNTIME,
              reloadConfig,
              onFatal,
            }),
        },
        {
          provide: NODE_DIAGNOSTICS,
          inject: [POSTGRES_PROCESS, EVENT_RECORDER],
          useFactory: (pg: PostgresProcess, events: EventRecorder) => nodeDiagnosticsSource(pg, events),
        },
      ],
      exports: [HaNode, NODE_DIAGNOSTICS],
    };
  }
}
