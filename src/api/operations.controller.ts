import { Body, Controller, Delete, Inject, Patch, Post, Put, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { NodeOperations, OperationAnswer } from '../ha/node-operations';
import { OperationRefused } from './operation-requests';

/** Plain-text answers, as the reference sends them, so patronictl and scripts keep working. */
async function answerText(reply: FastifyReply, work: () => Promise<OperationAnswer> | OperationAnswer): Promise<void> {
  let answer: OperationAnswer;
  try {
    answer = await work();
  } catch (error) {
    if (!(error instanceof OperationRefused)) throw error;
    answer = { status: error.status, text: error.text };
  }
  void reply.code(answer.status).type('text/plain; charset=utf-8').send(answer.text);
}

/** The operation endpoints of spec 4.7-4.11 and PATCH/PUT /config (4.6). */
@Controller()
export class OperationsController {
  constructor(@Inject(NodeOperations) private readonly operations: NodeOperations) {}

  @Post('switchover')
  switchover(@Body() body: unknown, @Res() reply: FastifyReply): Promise<void> {
    return answerText(reply, () => this.operations.switchover('switchover', body));
  }

  @Delete('switchover')
  cancelSwitchover(@Res() reply: FastifyReply): Promise<void> {
    return answerText(reply, () => this.operations.cancelSwitchover());
  }

  @Post('failover')
  failover(@Body() body: unknown, @Res() reply: FastifyReply): Promise<void> {
    return answerText(reply, () => this.operations.switchover('failover', body));
  }

  @Post('restart')
  restart(@Body() body: unknown, @Res() reply: FastifyReply): Promise<void> {
    return answerText(reply, () => this.operations.restart(body));
  }

  @Delete('restart')
  cancelRestart(@Res() reply: FastifyReply): Promise<void> {
    return answerText(reply, () => this.operations.cancelRestart());
  }

  @Post('reload')
  reload(@Body() body: unknown, @Res() reply: FastifyReply): Promise<void> {
    return answerText(reply, () => this.operations.reload(body));
  }

  @Post('reinitialize')
  reinitialize(@Body() body: unknown, @Res() reply: FastifyReply): Promise<void> {
    return answerText(reply, () => this.operations.reinitialize(body));
  }

  @Patch('config')
  async patchConfig(@Body() body: unknown, @Res() reply: FastifyReply): Promise<void> {
    const answer = await this.operations.patchConfig(body);
    void reply.code(answer.status).send(answer.body);
  }

  @Put('config')
  async putConfig(@Body() body: unknown, @Res() reply: FastifyReply): Promise<void> {
    const answer = await this.operations.putConfig(body);
    void reply.code(answer.status).send(answer.body);
  }
}
