import { DynamicModule, Module } from '@nestjs/common';
import { TimerClock } from '../common/clock';
import { Logger } from '../common/logger';
import { CLOCK, LOGGER, STATOR_CONFIG } from '../common/tokens';
import { StatorConfig } from './config.types';

/** The node's configuration, its clock and its logger: what every other module reads. */
@Module({})
export class ConfigModule {
  static forRoot(config: StatorConfig, clock: TimerClock, logger: Logger): DynamicModule {
    return {
      module: ConfigModule,
      global: true,
      providers: [
        { provide: STATOR_CONFIG, useValue: config },
        { provide: CLOCK, useValue: clock },
        { provide: LOGGER, useValue: logger },
      ],
      exports: [STATOR_CONFIG, CLOCK, LOGGER],
    };
  }
}

/** Seconds the DCS and the event store may take to answer, from the configuration. */
export function retryTimeoutMs(config: StatorConfig): number {
  return (config.bootstrap.dcs.retry_timeout ?? 10) * 1000;
}
