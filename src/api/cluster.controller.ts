import { Controller, Get, HttpException, HttpStatus, Inject, Optional, Options, Req, Res } from '@nestjs/common';
import { EVENT_LOG } from '../common/tokens';
import { EventLog } from '../events/event-log';
import { ApiOperation, ApiTags } from './openapi-decorators';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ClusterView } from '../dcs/dcs.port';
import { buildClusterDocument } from './cluster-document';
import { ClusterDocumentDto, DynamicConfigDto, HISTORY_SCHEMA, ScheduledOperationDto } from './dto/read-documents.dto';
import { normalizePath } from './health.controller';
import { errorBody } from './http-exception.filter';
import { NodeStateService } from './node-state.service';
import { EmptyAnswer, ErrorAnswers, JsonAnswer, JsonArrayAnswer } from './openapi/api-answers';
import { clusterViewIsFresh } from './status-document';

/**
 * Cluster reads (reference-behavior 1.5): `GET /cluster`, `/history`, `/config` from the node's
 * latest DCS read, never from a round trip. A view the node never had, or one older than `ttl`
 * (the reference's cache validity), is answered 503 rather than served as if it were current.
 * OPTIONS gives the code GET would give, without a body; HEAD is Fastify's, from GET.
 */
const STALE_VIEW: [number, string] = [
  503,
  'The node has not read the cluster from etcd yet, or its view is older than ttl.',
];

@ApiTags('cluster')
@Controller()
export class ClusterController {
  constructor(
    private readonly state: NodeStateService,
    /** The agent's event log; absent when the API runs over a fixed view (tests). */
    @Optional() @Inject(EVENT_LOG) private readonly eventLog?: EventLog,
  ) {}

  @Get('cluster')
  @ApiOperation({ summary: 'The cluster: members, roles, states, lags, scheduled switchover (spec 4.4)' })
  @JsonAnswer(200, 'The cluster document (spec 2.2).', ClusterDocumentDto)
  @ErrorAnswers(STALE_VIEW)
  cluster(): Record<string, unknown> {
    return buildClusterDocument(this.trustedCluster(), this.state.identity.scope);
  }

  /**
   * The timeline history folded from the recorded `timeline.created` facts. A cluster whose log
   * has none (inherited from Patroni, or not read yet) is answered from the DCS `history` key.
   */
  @Get('history')
  @ApiOperation({ summary: 'The timeline history (spec 4.5)' })
  @JsonAnswer(
    200,
    'The timeline history (spec 2.3): `[timeline, position, reason, created]` per switch.',
    HISTORY_SCHEMA as never,
  )
  @ErrorAnswers(STALE_VIEW)
  history(): unknown[] {
    const folded = this.eventLog?.projections().history ?? [];
    return folded.length > 0 ? folded : (this.trustedCluster().history?.value ?? []);
  }

  /** The scheduled-operation timeline: every scheduled switchover and restart with its fate. */
  @Get('schedule')
  @ApiOperation({ summary: 'The scheduled-operation timeline' })
  @JsonArrayAnswer(200, 'Every scheduled switchover and restart with its fate.', ScheduledOperationDto)
  schedule(): unknown[] {
    return this.eventLog?.projections().schedule ?? [];
  }

  @Get('config')
  @ApiOperation({ summary: 'The dynamic configuration (spec 4.6)' })
  @JsonAnswer(200, 'The dynamic configuration (spec 2.4) as stored in etcd.', DynamicConfigDto)
  @ErrorAnswers([502, 'etcd holds no configuration: the cluster is not initialized yet.'], STALE_VIEW)
  config(): Record<string, unknown> {
    const config = this.trustedCluster().config;
    if (!config) throw missingConfig();
    return config.value;
  }

  /** The members a leader must reach to stay primary while the DCS is down; 502 as the reference when there is no such key. */
  @Get('failsafe')
  @ApiOperation({ summary: 'The failsafe key: members a leader must reach while etcd is down' })
  @JsonAnswer(200, 'The members a failsafe leader must reach: member name to API URL.', {
    type: 'object',
    additionalProperties: { type: 'string' },
  })
  @ErrorAnswers([502, 'Failsafe mode is not enabled (no failsafe key).'])
  failsafe(): Record<string, string> {
    const failsafe = this.state.view().cluster?.failsafe?.value;
    if (!failsafe)
      throw new HttpException(
        errorBody(HttpStatus.BAD_GATEWAY, 'failsafe mode is not enabled (the DCS has no failsafe key)'),
        HttpStatus.BAD_GATEWAY,
      );
    return failsafe;
  }

  @Options(['cluster', 'history', 'config', 'schedule'])
  @ApiOperation({ summary: 'The code GET would give, without a body' })
  @EmptyAnswer(200, 'GET would answer 200.')
  @EmptyAnswer(502, '`/config`: etcd holds no configuration.')
  @EmptyAnswer(503, 'GET would answer 503.')
  options(@Req() request: FastifyRequest, @Res() reply: FastifyReply): void {
    const refusal =
      this.refusal() ??
      (normalizePath(request.url) === '/config' && !this.state.view().cluster?.config ? missingConfig() : null);
    void reply.code(refusal ? refusal.getStatus() : HttpStatus.OK).send();
  }

  private trustedCluster(): ClusterView {
    const refusal = this.refusal();
    if (refusal) throw refusal;
    return this.state.view().cluster as ClusterView;
  }

  /** Why the node's DCS view cannot be served (never read, or older than ttl), or null when it can. */
  private refusal(): HttpException | null {
    const view = this.state.view();
    const now = this.state.now();
    if (!view.cluster) return unavailable('the node has not read the cluster from the DCS yet');
    if (clusterViewIsFresh(view, now)) return null;
    const ageSeconds = Math.round((now - view.dcsLastSeen) / 1000);
    return unavailable(`the DCS view is stale: last read ${ageSeconds} s ago, more than ttl (${view.config.ttl} s)`);
  }
}

function unavailable(message: string): HttpException {
  return new HttpException(errorBody(HttpStatus.SERVICE_UNAVAILABLE, message), HttpStatus.SERVICE_UNAVAILABLE);
}

/** The reference answers 502 when the `config` key is missing. */
function missingConfig(): HttpException {
  return new HttpException(
    errorBody(HttpStatus.BAD_GATEWAY, 'the DCS has no config key: the cluster is not initialized yet'),
    HttpStatus.BAD_GATEWAY,
  );
}
