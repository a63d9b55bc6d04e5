import { Module } from '@nestjs/common';
import { TimerClock } from '../common/clock';
import { COMPONENT_LOGGERS, componentLogger, Logger } from '../common/logger';
import { CLOCK, EVENT_RECORDER, LOGGER, STATOR_CONFIG } from '../common/tokens';
import { StatorConfig } from '../config/config.types';
import { EventRecorder } from '../events/event-recorder';
import { EventsModule } from '../events/events.module';
import { CallbackRunner } from './callback-runner';

/** `postgresql.callbacks`: commands run on role changes, driven by the recorded transitions. */
@Module({
  imports: [EventsModule],
  providers: [
    {
      provide: CallbackRunner,
      inject: [STATOR_CONFIG, EVENT_RECORDER, CLOCK, LOGGER],
      useFactory: (config: StatorConfig, events: EventRecorder, clock: TimerClock, logger: Logger) =>
        new CallbackRunner({
          commands: config.postgresql.callbacks ?? {},
          scope: config.scope,
          node: config.name,
          events,
          clock,
          log: componentLogger(logger, COMPONENT_LOGGERS.callbacks),
        }),
    },
  ],
  exports: [CallbackRunner],
})
export class CallbacksModule {}
