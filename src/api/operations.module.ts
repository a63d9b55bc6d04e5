import { Module } from '@nestjs/common';
import { TimerClock } from '../common/clock';
import { COMPONENT_LOGGERS, componentLogger, Logger } from '../common/logger';
import { CLOCK, DCS, LOGGER } from '../common/tokens';
import { Dcs } from '../dcs/dcs.port';
import { HaNode } from '../ha/ha-node';
import { NodeOperations } from '../ha/node-operations';
import { OperationsController } from './operations.controller';

/** The operation endpoints: they need the running node (its HA loop and the DCS), not just its view. */
@Module({
  controllers: [OperationsController],
  providers: [
    {
      provide: NodeOperations,
      inject: [HaNode, DCS, CLOCK, LOGGER],
      useFactory: (node: HaNode, dcs: Dcs, clock: TimerClock, logger: Logger) =>
        new NodeOperations(node, dcs, clock, componentLogger(logger, COMPONENT_LOGGERS.api).warning),
    },
  ],
})
export class OperationsModule {}
