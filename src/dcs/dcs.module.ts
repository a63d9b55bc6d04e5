import { Module } from '@nestjs/common';
import { TimerClock } from '../common/clock';
import { COMPONENT_LOGGERS, componentLogger, Logger } from '../common/logger';
import { CLOCK, DCS, LOGGER, STATOR_CONFIG } from '../common/tokens';
import { retryTimeoutMs } from '../config/config.module';
import { StatorConfig } from '../config/config.types';
import { srvRediscovery } from './etcd/etcd-srv-discovery';
import { Dcs } from './dcs.port';
import { EtcdDcs } from './etcd-dcs';

/** The DCS port over etcd v3. */
@Module({
  providers: [
    {
      provide: DCS,
      inject: [STATOR_CONFIG, CLOCK, LOGGER],
      useFactory: (config: StatorConfig, clock: TimerClock, nodeLogger: Logger): Dcs => {
        const logger = componentLogger(nodeLogger, COMPONENT_LOGGERS.dcs);
        return new EtcdDcs({
          ...config.etcd3,
          rediscoverHosts: srvRediscovery(config.etcd3, logger),
          namespace: config.namespace,
          scope: config.scope,
          name: config.name,
          ttlSeconds: config.bootstrap.dcs.ttl ?? 30,
          retryTimeoutMs: retryTimeoutMs(config),
          clock,
          logger,
        });
      },
    },
  ],
  exports: [DCS],
})
export class DcsModule {}
