import { DynamicModule, Module, Provider } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { Clock } from '../common/clock';
import { CLOCK, EVENT_LOG } from '../common/tokens';
import { EventLog } from '../events/event-log';
import { HaNode } from '../ha/ha-node';
import { NODE_DIAGNOSTICS, NodeDiagnosticsSource } from '../ha/node-diagnostics';
import { ClusterController } from './cluster.controller';
import { diagnosticsController } from './diagnostics/diagnostics.controller';
import { EventsController } from './events.controller';
import { HealthRoutes } from './health.controller';
import { HttpExceptionFilter } from './http-exception.filter';
import { MetricsController } from './metrics.controller';
import { OpenApiController, OpenApiDocument } from './openapi/openapi.controller';
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
  /** The fence and event queue the diagnostics read; default: the node's, or none known with a fixed `source`. */
  diagnostics?: NodeDiagnosticsSource;
}

/** A fixed view has no fence and no event recorder behind it. */
const NOTHING_BEHIND_THE_VIEW: NodeDiagnosticsSource = {
  diagnostics: () => ({
    fence: { connected: false, deadline: null },
    eventQueue: { depth: 0, oldestAt: null, storeDownSince: null },
  }),
};

/** The node's HTTP API. Controllers read the node view and never talk to PostgreSQL or etcd. */
@Module({})
export class ApiModule {
  static register(options: ApiModuleOptions): DynamicModule {
    return {
      module: ApiModule,
      controllers: [
        statusController(options.identity.productKey),
        diagnosticsController(options.identity.productKey),
        MetricsController,
        ClusterController,
        EventsController,
        UiController,
        OpenApiController,
      ],
      providers: [
        options.source
          ? { provide: NODE_VIEW_SOURCE, useValue: options.source }
          : { provide: NODE_VIEW_SOURCE, useExisting: HaNode },
        { provide: API_IDENTITY, useValue: options.identity },
        options.clock ? { provide: API_CLOCK, useValue: options.clock } : { provide: API_CLOCK, useExisting: CLOCK },
        HealthRoutes,
        ...(options.eventLog ? [{ provide: EVENT_LOG, useValue: options.eventLog }] : []),
        NodeStateService,
        OpenApiDocument,
        ...diagnosticsProvider(options),
        { provide: APP_FILTER, useClass: HttpExceptionFilter },
      ],
    };
  }
}

/** The node's own source comes from the HA module (global); a fixed view gets the given one or none. */
function diagnosticsProvider(options: ApiModuleOptions): Provider[] {
  if (options.diagnostics) return [{ provide: NODE_DIAGNOSTICS, useValue: options.diagnostics }];
  return options.source ? [{ provide: NODE_DIAGNOSTICS, useValue: NOTHING_BEHIND_THE_VIEW }] : [];
}
