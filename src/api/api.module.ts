import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { Clock } from '../common/clock';
import { CLOCK, EVENT_LOG } from '../common/tokens';
import { EventLog } from '../events/event-log';
import { HaNode } from '../ha/ha-node';
import { ClusterController } from './cluster.controller';
import { EventsController } from './events.controller';
import { HealthRoutes } from './health.controller';
import { HttpExceptionFilter } from './http-exception.filter';
import { MetricsController } from './metrics.controller';
import { API_CLOCK, API_IDENTITY, NODE_VIEW_SOURCE, NodeStateService, NodeViewSource } from './node-state.service';
import { ApiIdentity } from './status-document';
import { statusController } from './status.controller';
import { UiController } from './ui.controller';

export interface ApiModuleOptions {
  identity: ApiIdentity;
  /** Where the view comes from; default: the node's HaNode. Tests pass a fixed view. */
  source?: NodeViewSource;
  /** Default: the node's clock. */
  clock?: Clock;
  /** The log `/events` serves; default: the node's (EVENT_LOG). Tests pass their own. */
  eventLog?: EventLog;
}

/** The node's HTTP API. Controllers read the node view and never talk to PostgreSQL or etcd. */
@Module({})
export class ApiModule {
  static register(options: ApiModuleOptions): DynamicModule {
    return {
      module: ApiModule,
      controllers: [statusController(options.identity.productKey), MetricsController, ClusterController, EventsController, UiController],
      providers: [
        options.source ? { provide: NODE_VIEW_SOURCE, useValue: options.source } : { provide: NODE_VIEW_SOURCE, useExisting: HaNode },
        { provide: API_IDENTITY, useValue: options.identity },
        options.clock ? { provide: API_CLOCK, useValue: options.clock } : { provide: API_CLOCK, useExisting: CLOCK },
        HealthRoutes,
        ...(options.eventLog ? [{ provide: EVENT_LOG, useValue: options.eventLog }] : []),
        NodeStateService,
        { provide: APP_FILTER, useClass: HttpExceptionFilter },
      ],
    };
  }
}
