import { EventEmitter } from 'node:events';
import { DynamicModule, Inject, Injectable, Module, OnApplicationShutdown } from '@nestjs/common';
import { ApiModule } from './api/api.module';
import { OperationsModule } from './api/operations.module';
import { CallbackRunner } from './callbacks/callback-runner';
import { CallbacksModule } from './callbacks/callbacks.module';
import { systemClock, TimerClock } from './common/clock';
import { createConfiguredLogger, Logger } from './common/logger';
import { DCS, EVENT_LOG, EVENT_RECORDER, LOGGER, POSTGRES_PROCESS, POSTGRES_QUERY } from './common/tokens';
import { ConfigModule } from './config/config.module';
import { StatorConfig } from './config/config.types';
import { DcsModule } from './dcs/dcs.module';
import { Dcs } from './dcs/dcs.port';
import { EventLog } from './events/event-log';
import { EventRecorder } from './events/event-recorder';
import { EventRetention } from './events/event-retention';
import { EventsModule } from './events/events.module';
import { HaModule } from './ha/ha.module';
import { HaNode } from './ha/ha-node';
import { PostgresqlModule } from './postgresql/postgresql.module';
import { PostgresProcess, PostgresQuery } from './postgresql/postgres.port';
import { STATOR_VERSION } from './version';

export interface NodeOptions {
  clock?: TimerClock;
  /** Reads the configuration file again (POST /reload). */
  reloadConfig?: () => StatorConfig;
  /** Default: one made from the `log` section. */
  logger?: Logger;
}

/** Where a fatal condition of the node is announced; the CLI exits on it. */
export const fatal = new EventEmitter<{ fatal: [string] }>();

/**
 * The node, composed from Nest modules, one per concern (config, dcs, events, postgresql, ha,
 * callbacks), each providing a port over its real adapter. The HA module wraps the XState actors
 * in `HaNode`; the API module reads its view.
 */
@Module({})
export class NodeModule {
  static forConfig(
    config: StatorConfig,
    { clock = systemClock, reloadConfig, logger: given }: NodeOptions = {},
  ): DynamicModule {
    const logger =
      given ?? createConfiguredLogger(config.log, `${config.compat === 'patroni' ? 'patroni' : 'stator'}.log`);
    return {
      module: NodeModule,
      global: true,
      imports: [
        ConfigModule.forRoot(config, clock, logger),
        DcsModule,
        EventsModule,
        PostgresqlModule,
        HaModule.forRoot({ reloadConfig, onFatal: (reason) => fatal.emit('fatal', reason) }),
        CallbacksModule,
      ],
      providers: [NodeLifecycle],
      exports: [HaModule, DcsModule, EventsModule],
    };
  }
}

/** Starts the node after the API listens and stops it in order on shutdown. */
@Injectable()
export class NodeLifecycle implements OnApplicationShutdown {
  constructor(
    private readonly node: HaNode,
    @Inject(EVENT_RECORDER) private readonly recorder: EventRecorder,
    @Inject(DCS) private readonly dcs: Dcs,
    @Inject(POSTGRES_PROCESS) private readonly pg: PostgresProcess,
    @Inject(POSTGRES_QUERY) private readonly query: PostgresQuery,
    @Inject(LOGGER) private readonly logger: Logger,
    @Inject(EVENT_LOG) private readonly eventLog: EventLog,
    private readonly retention: EventRetention,
    private readonly callbacks: CallbackRunner,
  ) {}

  async start(): Promise<void> {
    await this.recorder.start();
    this.eventLog.start(
      (message) => this.logger.warning(message),
      (message) => this.logger.info(message),
    );
    this.retention.start();
    this.callbacks.follow(this.recorder.recorded$);
    await this.node.start();
  }

  /**
   * Patroni's shutdown: stop PostgreSQL (unless paused), release the lock, leave the cluster. A leader
   * that published its shutdown position leaves its member key to expire, so the next race sees it.
   * Paused, nothing is stopped or released: the keys live out their ttl (Patroni: "Leader key is not
   * deleted and Postgresql is not stopped due paused state"), so an agent restarted within it (a rolling
   * upgrade) finds its leader key and member key still there and takes them over.
   */
  async onApplicationShutdown(): Promise<void> {
    const paused = this.node.view().config.pause;
    if (paused) this.logger.info('Leader key is not deleted and PostgreSQL is not stopped due paused state');
    const { keepMemberKey } = await this.node.stop(!paused);
    this.callbacks.stop();
    await this.query.close().catch(() => undefined);
    await this.pg.detach().catch(() => undefined);
    await this.retention.stop();
    await this.recorder.stop();
    this.eventLog.stop();
    await this.dcs
      .close({ keepLease: keepMemberKey || paused })
      .catch((e) => this.logger.warning(`closing the DCS connection failed: ${String(e)}`));
  }
}

/** The whole agent: the node's modules plus its HTTP API. */
@Module({})
export class AppModule {
  static forConfig(config: StatorConfig, options: NodeOptions = {}): DynamicModule {
    const productKey = config.compat === 'patroni' ? 'patroni' : 'stator';
    return {
      module: AppModule,
      imports: [
        NodeModule.forConfig(config, options),
        ApiModule.register({ identity: { scope: config.scope, version: STATOR_VERSION, productKey } }),
        OperationsModule,
      ],
    };
  }
}
