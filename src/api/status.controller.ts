import { Controller, Get, Inject, Options, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from './openapi-decorators';
import type { FastifyReply } from 'fastify';
import { StatusDocumentDto } from './dto/read-documents.dto';
import { NodeStateService } from './node-state.service';
import { EmptyAnswer, JsonAnswer } from './openapi/api-answers';

/** `GET /stator` (or `/patroni` in compatibility mode): the node status document, always 200. */
export function statusController(productPath: 'stator' | 'patroni') {
  @ApiTags('status')
  @Controller()
  class StatusController {
    constructor(@Inject(NodeStateService) readonly state: NodeStateService) {}

    @Get(productPath)
    @ApiOperation({ summary: 'The node status document (spec 4.2)' })
    @JsonAnswer(200, 'The node status document (spec 2.1), from memory.', StatusDocumentDto)
    get(): Record<string, unknown> {
      return this.state.statusDocument();
    }

    @Options(productPath)
    @ApiOperation({ summary: 'Always 200, no body' })
    @EmptyAnswer(200, 'Always.')
    options(@Res() reply: FastifyReply): void {
      void reply.code(200).send();
    }
  }
  return StatusController;
}
