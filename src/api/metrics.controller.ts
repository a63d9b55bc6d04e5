import { Controller, Get, Options, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { buildMetrics, METRICS_CONTENT_TYPE } from './metrics';
import { NodeStateService } from './node-state.service';

/**
 * `GET /metrics`: the node's state in the Prometheus text format, from memory, always 200.
 * HEAD (Fastify's, from GET) and OPTIONS give the same code without a body.
 */
@Controller('metrics')
export class MetricsController {
  constructor(private readonly state: NodeStateService) {}

  @Get()
  get(@Res() reply: FastifyReply): void {
    void reply.code(200).type(METRICS_CONTENT_TYPE).send(buildMetrics(this.state.view(), this.state.identity, this.state.now()));
  }

  @Options()
  options(@Res() reply: FastifyReply): void {
    void reply.code(200).send();
  }
}
