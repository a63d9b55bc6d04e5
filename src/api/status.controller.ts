import { Controller, Get, Inject, Options, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { NodeStateService } from './node-state.service';

/** `GET /stator` (or `/patroni` in compatibility mode): the node status document, always 200. */
export function statusController(productPath: 'stator' | 'patroni') {
  @Controller()
  class StatusController {
    constructor(@Inject(NodeStateService) readonly state: NodeStateService) {}

    @Get(productPath)
    get(): Record<string, unknown> {
      return this.state.statusDocument();
    }

    @Options(productPath)
    options(@Res() reply: FastifyReply): void {
      void reply.code(200).send();
    }
  }
  return StatusController;
}
