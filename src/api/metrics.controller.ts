import { Controller, Get, Options, Res } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from './openapi-decorators';
import type { FastifyReply } from 'fastify';
import { buildMetrics, METRICS_CONTENT_TYPE } from './metrics';
import { NodeStateService } from './node-state.service';
import { EmptyAnswer } from './openapi/api-answers';

/**
 * `GET /metrics`: the node's state in the Prometheus text format, from memory, always 200.
 * HEAD (Fastify's, from GET) and OPTIONS give the same code without a body.
 */
@ApiTags('status')
@Controller('metrics')
export class MetricsController {
  constructor(private readonly state: NodeStateService) {}

  @Get()
  @ApiOperation({ summary: 'Prometheus metrics (spec 4.3)' })
  @ApiResponse({
    status: 200,
    description: 'The Prometheus text exposition (version 0.0.4), `stator_*` or `patroni_*` metrics.',
    content: { 'text/plain': { schema: { type: 'string' } } },
  })
  get(@Res() reply: FastifyReply): void {
    void reply
      .code(200)
      .type(METRICS_CONTENT_TYPE)
      .send(buildMetrics(this.state.view(), this.state.identity, this.state.now()));
  }

  @Options()
  @ApiOperation({ summary: 'Always 200, no body' })
  @EmptyAnswer(200, 'Always.')
  options(@Res() reply: FastifyReply): void {
    void reply.code(200).send();
  }
}
