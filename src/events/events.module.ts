import { Module } from '@nestjs/common';
import { TimerClock } from '../common/clock';
import { Logger } from '../common/logger';
import { CLOCK, EVENT_LOG, EVENT_RECORDER, EVENT_STORE, LOGGER, STATOR_CONFIG } from '../common/tokens';
import { retryTimeoutMs } from '../config/config.module';
import { StatorConfig } from '../config/config.types';
import { srvRediscovery } from '../dcs/etcd/etcd-srv-discovery';
import { EtcdEventStore } from './etcd-event-store';
import { EventLog } from './event-log';
import { EventRecorder } from './event-recorder';
import { EventRetention } from './event-retention';
import { EventStore } from './event-store.port';

/** The event store (in etcd), the recorder every transition goes through, the log read back from it and its retention. */
@Module({
  providers: [
    {
      provide: EVENT_STORE,
      inject: [STATOR_CONFIG, LOGGER],
      useFactory: (config: StatorConfig, logger: Logger): EventStore =>
        new EtcdEventStore({
          ...config.etcd3,
          rediscoverHosts: srvRediscovery(config.etcd3, logger),
          scope: config.scope,
          namespace: config.namespace,
          requestTimeoutMs: retryTimeoutMs(config),
          logger,
          quota: { quotaBytes: config.event_log.etcd_quota_bytes, share: config.event_log.etcd_quota_share },
        }),
    },
    {
      provide: EVENT_RECORDER,
      inject: [EVENT_STORE, STATOR_CONFIG, CLOCK, LOGGER],
      useFactory: (store: EventStore, config: StatorConfig, clock: TimerClock, logger: Logger) =>
        new EventRecorder({
          store,
          queueDir: config.state_dir,
          node: config.name,
          clock,
          logger: { warn: logger.warning, log: logger.info },
        }),
    },
    { provide: EVENT_LOG, inject: [EVENT_STORE], useFactory: (store: EventStore) => new EventLog(store) },
    {
      provide: EventRetention,
      inject: [EVENT_STORE, STATOR_CONFIG, CLOCK, LOGGER],
      useFactory: (store: EventStore, { event_log: settings }: StatorConfig, clock: TimerClock, logger: Logger) =>
        new EventRetention({
          store,
          clock,
          policy: {
            maxAgeMs: settings.max_age * 1000,
            maxEventsPerStream: settings.max_events_per_stream,
            maxBytes: settings.max_bytes,
          },
          logger: { warn: logger.warning, log: logger.info },
        }),
    },
  ],
  exports: [EVENT_STORE, EVENT_RECORDER, EVENT_LOG, EventRetention],
})
export class EventsModule {}
