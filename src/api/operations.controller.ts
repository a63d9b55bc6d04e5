import { ArgumentsHost, Body, Catch, Controller, Delete, ExceptionFilter, Inject, Patch, Post, Put, Res, UseFilters } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { NodeOperations } from '../ha/node-operations';
import { ConfigAnswer, ConfigWrite, OperationAnswer, OperationRefused } from '../ha/operation-types';
import { ConfigBodyPipe } from './dto/config-body.pipe';
import { objectBody, ValidatedBody } from './dto/operation-body.pipe';
import { ReinitializeBody, RestartBody, SwitchoverBody } from './dto/operation-bodies.dto';
import { parseFailsafeCall, parseReinitialize, parseRestart, parseSwitchover, reinitializeBody, restartBody, switchoverBody } from './operation-requests';

const PLAIN_TEXT = 'text/plain; charset=utf-8';

/** A refused operation is answered in plain text, as the reference does, wherever it was refused (body pipe or handler). */
@Catch(OperationRefused)
export class OperationRefusedFilter implements ExceptionFilter {
  catch(refusal: OperationRefused, host: ArgumentsHost): void {
    void host.switchToHttp().getResponse<FastifyReply>().code(refusal.status).type(PLAIN_TEXT).send(refusal.text);
  }
}

/** Plain-text answers, as the reference sends them, so patronictl and scripts keep working. */
async function answerText(reply: FastifyReply, work: () => Promise<OperationAnswer> | OperationAnswer): Promise<void> {
  const answer = await work();
  void reply.code(answer.status).type(PLAIN_TEXT).send(answer.text);
}

/**
 * `/config` answers are JSON. Settings that were accepted but are not acted on yet come back as
 * `Warning` headers (RFC 9111 code 299), so the body keeps the reference's shape.
 */
function answerConfig(reply: FastifyReply, answer: ConfigAnswer): void {
  const warnings = answer.warnings ?? [];
  if (warnings.length > 0) void reply.header('warning', warnings.map((w) => `299 stator ${JSON.stringify(w)}`).join(', '));
  void reply.code(answer.status).send(answer.body);
}

/** The operation endpoints of spec 4.7-4.11 and PATCH/PUT /config (4.6). Bodies are validated by their DTO pipes first. */
@Controller()
@UseFilters(OperationRefusedFilter)
export class OperationsController {
  constructor(@Inject(NodeOperations) private readonly operations: NodeOperations) {}

  @Post('switchover')
  switchover(@Body(switchoverBody) body: ValidatedBody<SwitchoverBody>, @Res() reply: FastifyReply): Promise<void> {
    return this.handover('switchover', body, reply);
  }

  @Delete('switchover')
  cancelSwitchover(@Res() reply: FastifyReply): Promise<void> {
    return answerText(reply, () => this.operations.cancelSwitchover());
  }

  @Post('failover')
  failover(@Body(switchoverBody) body: ValidatedBody<SwitchoverBody>, @Res() reply: FastifyReply): Promise<void> {
    return this.handover('failover', body, reply);
  }

  @Post('restart')
  restart(@Body(restartBody) body: ValidatedBody<RestartBody>, @Res() reply: FastifyReply): Promise<void> {
    const { paused, now } = this.operations.requestContext();
    return answerText(reply, () => this.operations.restart(parseRestart(body, paused, now)));
  }

  @Delete('restart')
  cancelRestart(@Res() reply: FastifyReply): Promise<void> {
    return answerText(reply, () => this.operations.cancelRestart());
  }

  @Post('reload')
  reload(@Body() body: unknown, @Res() reply: FastifyReply): Promise<void> {
    objectBody(body, true);
    return answerText(reply, () => this.operations.reload());
  }

  @Post('failsafe')
  failsafe(@Body() body: unknown, @Res() reply: FastifyReply): Promise<void> {
    return answerText(reply, () => this.operations.acceptFailsafe(parseFailsafeCall(objectBody(body, false))));
  }

  @Post('reinitialize')
  reinitialize(@Body(reinitializeBody) body: ValidatedBody<ReinitializeBody>, @Res() reply: FastifyReply): Promise<void> {
    return answerText(reply, () => this.operations.reinitialize(parseReinitialize(body)));
  }

  @Patch('config')
  async patchConfig(@Body(ConfigBodyPipe) write: ConfigWrite, @Res() reply: FastifyReply): Promise<void> {
    answerConfig(reply, await this.operations.patchConfig(write));
  }

  @Put('config')
  async putConfig(@Body(ConfigBodyPipe) write: ConfigWrite, @Res() reply: FastifyReply): Promise<void> {
    answerConfig(reply, await this.operations.putConfig(write));
  }

  private handover(kind: 'switchover' | 'failover', body: ValidatedBody<SwitchoverBody>, reply: FastifyReply): Promise<void> {
    const { paused, now } = this.operations.requestContext();
    return answerText(reply, () => this.operations.switchover(parseSwitchover(kind, body, paused, now), kind));
  }
}
