import { EventEmitter } from 'node:events';
import { DynamicModule, Inject, Injectable, Module, OnApplicationShutdown } from '@nestjs/common';
import { ApiModule } from './api/api.module';
import { CallbackRunner } from './callbacks/callback-runner';
import { OperationsModule } from './api/operations.module';
import { systemClock, TimerClock } from './common/clock';
import { createConfiguredLogger, Logger } from './common/logger';
import { CLOCK, DCS, EVENT_LOG, EVENT_RECORDER, EVENT_STORE, LOGGER, POSTGRES_PROCESS, POSTGRES_QUERY, STATOR_CONFIG } from './common/tokens';
import { StatorConfig } from './config/config.types';
import { Dcs } from './dcs/dcs.port';
import { EtcdDcs } from './dcs/etcd-dcs';
import { EtcdEventStore } from './events/etcd-event-store';
import { EventLog } from './events/event-log';
import { EventRecorder } from './events/event-recorder';
import { EventRetention } from './events/event-retention';
import { EventStore } from './events/event-store.port';
import { HaNode } from './ha/ha-node';
import { PgQuery } from './postgresql/pg-query';
import { PostgresProcess, PostgresQuery } from './postgresql/postgres.port';
import { RealPostgresProcess } from './postgresql/real-postgres-process';
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
 * The node, composed from Nest modules: one per concern, each providing a port over its real
 * adapter. The HA module wraps the XState actors in `HaNode`; the API module reads its view.
 */
@Module({})
export class NodeModule {
  static forConfig(config: StatorConfig, { clock = systemClock, reloadConfig, logger: given }: NodeOptions = {}): DynamicModule {
    const logger = given ?? createConfiguredLogger(config.log, `${config.compat === 'patroni' ? 'patroni' : 'stator'}.log`);
    const retryTimeoutMs = () => (config.bootstrap.dcs.retry_timeout ?? 10) * 1000;
    return {
      module: NodeModule,
      global: true,
      providers: [
        { provide: STATOR_CONFIG, useValue: config },
        { provide: CLOCK, useValue: clock },
        { provide: LOGGER, useValue: logger },
        {
          provide: DCS,
          useFactory: (): Dcs =>
            new EtcdDcs({
              ...config.etcd3,
              namespace: config.namespace,
              scope: config.scope,
              name: config.name,
              ttlSeconds: config.bootstrap.dcs.ttl ?? 30,
              retryTimeoutMs: retryTimeoutMs(),
              clock,
            }),
        },
        {
          provide: EVENT_STORE,
          useFactory: (): EventStore => new EtcdEventStore({ ...config.etcd3, scope: config.scope, requestTimeoutMs: retryTimeoutMs() }),
        },
        {
          provide: EVENT_RECORDER,
          inject: [EVENT_STORE],
          useFactory: (store: EventStore) =>
            new EventRecorder({ store, queueDir: config.state_dir, node: config.name, clock, logger: { warn: logger.warning, log: logger.info } }),
        },
        {
          provide: POSTGRES_PROCESS,
          useFactory: (): PostgresProcess =>
            new RealPostgresProcess({
              name: config.name,
              config: config.postgresql,
              stateDir: config.state_dir,
              initdbOptions: config.bootstrap.initdb,
              log: (lvl, message) => (lvl === 'warning' ? logger.warning(message) : logger.info(message)),
            }),
        },
        { provide: POSTGRES_QUERY, useFactory: (): PostgresQuery => PgQuery.fromConfig(config.postgresql) },
        { provide: EVENT_LOG, inject: [EVENT_STORE], useFactory: (store: EventStore) => new EventLog(store) },
        {
          provide: EventRetention,
          inject: [EVENT_STORE],
          useFactory: (store: EventStore) => new EventRetention({ store, clock, logger: { warn: logger.warning, log: logger.info } }),
        },
        {
          provide: HaNode,
          inject: [DCS, POSTGRES_PROCESS, POSTGRES_QUERY, EVENT_RECORDER, EVENT_LOG],
          useFactory: (dcs: Dcs, pg: PostgresProcess, query: PostgresQuery, events: EventRecorder, eventLog: EventLog) =>
            new HaNode({ config, dcs, pg, query, events, eventLog, clock, logger, version: STATOR_VERSION, reloadConfig, onFatal: (reason) => fatal.emit('fatal', reason) }),
        },
        {
          provide: CallbackRunner,
          inject: [EVENT_RECORDER],
          useFactory: (events: EventRecorder) =>
            new CallbackRunner({ commands: config.postgresql.callbacks ?? {}, scope: config.scope, node: config.name, events, clock, log: logger }),
        },
        NodeLifecycle,
      ],
      exports: [HaNode, DCS, EVENT_LOG, STATOR_CONFIG, CLOCK, LOGGER],
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
    this.eventLog.start((message) => this.logger.warning(message));
    this.retention.start();
    this.callbacks.follow(this.recorder.recorded$);
    await this.node.start();
  }

  /** Patroni's shutdown: stop PostgreSQL (unless paused), release the lock, leave the cluster. */
  async onApplicationShutdown(): Promise<void> {
    const paused = this.node.view().config.pause;
    await this.node.stop(!paused);
    this.callbacks.stop();
    await this.query.close().catch(() => undefined);
    await this.pg.detach().catch(() => undefined);
    await this.retention.stop();
    await this.recorder.stop();
    this.eventLog.stop();
    await this.dcs.close().catch((e) => this.logger.warning(`closing the DCS connection failed: ${String(e)}`));
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
