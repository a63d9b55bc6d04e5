import {
  ArgumentsHost,
  Body,
  Catch,
  Controller,
  Delete,
  ExceptionFilter,
  Inject,
  Patch,
  Post,
  Put,
  Res,
  UseFilters,
} from '@nestjs/common';
import { ApiBody, ApiOperation, ApiTags } from './openapi-decorators';
import type { FastifyReply } from 'fastify';
import { NodeOperations } from '../ha/node-operations';
import { ConfigAnswer, ConfigWrite, OperationAnswer, OperationRefused } from '../ha/operation-types';
import { ConfigBodyPipe } from './dto/config-body.pipe';
import { ValidatedBody } from './dto/operation-body.pipe';
import { ReinitializeBody, RestartBody, SwitchoverBody } from './dto/operation-bodies.dto';
import { DynamicConfigDto } from './dto/read-documents.dto';
import { AccessRefusals, BodyRefusals, ErrorAnswers, JsonAnswer, TextAnswer } from './openapi/api-answers';
import { FailsafeCall } from '../ha/failsafe/failsafe-caller';
import {
  failsafeBody,
  parseReinitialize,
  parseRestart,
  parseSwitchover,
  reinitializeBody,
  reloadBody,
  restartBody,
  switchoverBody,
} from './operation-requests';

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
  for (const [name, value] of Object.entries(answer.headers ?? {})) void reply.header(name, value);
  void reply.code(answer.status).type(PLAIN_TEXT).send(answer.text);
}

/**
 * `/config` answers are JSON. Settings that were accepted but are not acted on yet come back as
 * `Warning` headers (RFC 9111 code 299), so the body keeps the reference's shape.
 */
function answerConfig(reply: FastifyReply, answer: ConfigAnswer): void {
  const warnings = answer.warnings ?? [];
  if (warnings.length > 0)
    void reply.header('warning', warnings.map((w) => `299 stator ${JSON.stringify(w)}`).join(', '));
  void reply.code(answer.status).send(answer.body);
}

/** The operation endpoints of spec 4.7-4.11 and PATCH/PUT /config (4.6). Each body is checked by its pipe (operation-requests.ts, dto/config-body.pipe.ts) first. */
@ApiTags('operations')
@Controller()
@UseFilters(OperationRefusedFilter)
@AccessRefusals()
export class OperationsController {
  constructor(@Inject(NodeOperations) private readonly operations: NodeOperations) {}

  @Post('switchover')
  @ApiOperation({ summary: 'Switchover: hand the leader lock to a candidate, now or at scheduled_at (spec 4.7)' })
  @ApiBody({ type: SwitchoverBody, required: false })
  @TextAnswer(200, 'Successfully switched over to "node2"')
  @TextAnswer(202, 'Switchover scheduled')
  @TextAnswer(412, 'candidate name does not match with sync_standby (the switchover is not possible now)')
  @TextAnswer(422, 'Unable to parse scheduled timestamp. It should be in an unambiguous format, e.g. ISO 8601')
  @TextAnswer(503, 'Switchover failed (or etcd is not accessible)')
  @BodyRefusals('1 MiB', 'Switchover could be performed only from a specific leader (or another refused body)')
  switchover(@Body(switchoverBody) body: ValidatedBody<SwitchoverBody>, @Res() reply: FastifyReply): Promise<void> {
    return this.handover('switchover', body, reply);
  }

  @Delete('switchover')
  @ApiOperation({ summary: 'Delete the scheduled switchover' })
  @TextAnswer(200, 'scheduled switchover deleted')
  @TextAnswer(404, 'no switchover is scheduled')
  @TextAnswer(409, 'the scheduled switchover changed while it was being deleted; read it again')
  @TextAnswer(503, 'DCS is not accessible')
  cancelSwitchover(@Res() reply: FastifyReply): Promise<void> {
    return answerText(reply, () => this.operations.cancelSwitchover());
  }

  @Post('failover')
  @ApiOperation({ summary: 'Failover to a named candidate, with or without a leader (spec 4.8)' })
  @ApiBody({ type: SwitchoverBody, required: false })
  @TextAnswer(200, 'Successfully failed over to "node2"')
  @TextAnswer(412, 'candidate name does not match with sync_standby (the failover is not possible now)')
  @TextAnswer(503, 'Failover failed (or etcd is not accessible)')
  @BodyRefusals('1 MiB', 'Failover could be performed only to a specific candidate (or another refused body)')
  failover(@Body(switchoverBody) body: ValidatedBody<SwitchoverBody>, @Res() reply: FastifyReply): Promise<void> {
    return this.handover('failover', body, reply);
  }

  @Post('restart')
  @ApiOperation({ summary: 'Restart PostgreSQL on this node, now or at schedule, under filters (spec 4.9)' })
  @ApiBody({ type: RestartBody, required: false })
  @TextAnswer(200, 'restarted successfully')
  @TextAnswer(202, 'Restart scheduled')
  @TextAnswer(409, 'Another restart is already scheduled')
  @TextAnswer(422, 'Cannot schedule restart in the past')
  @TextAnswer(500, "Can't schedule restart in the paused state")
  @TextAnswer(503, 'restart conditions are not satisfied (or restart failed)')
  @BodyRefusals('1 MiB', 'Timeout should be a positive number of seconds (or another refused field)')
  restart(@Body(restartBody) body: ValidatedBody<RestartBody>, @Res() reply: FastifyReply): Promise<void> {
    const { paused, now } = this.operations.requestContext();
    return answerText(reply, () => this.operations.restart(parseRestart(body, paused, now)));
  }

  @Delete('restart')
  @ApiOperation({ summary: "Delete this node's scheduled restart" })
  @TextAnswer(200, 'scheduled restart deleted')
  @TextAnswer(404, 'no restarts are scheduled')
  cancelRestart(@Res() reply: FastifyReply): Promise<void> {
    return answerText(reply, () => this.operations.cancelRestart());
  }

  @Post('reload')
  @ApiOperation({ summary: 'Re-read the configuration file, as SIGHUP (spec 4.10)' })
  @TextAnswer(202, 'reload scheduled')
  @BodyRefusals('1 MiB', 'Request body must be a JSON object')
  reload(@Body(reloadBody) _body: void, @Res() reply: FastifyReply): Promise<void> {
    return answerText(reply, () => this.operations.reload());
  }

  @Post('failsafe')
  @ApiOperation({ summary: "A failsafe leader's call while etcd is down" })
  @ApiBody({
    required: true,
    schema: {
      type: 'object',
      additionalProperties: true,
      description: "The failsafe leader's call: its name and position.",
    },
  })
  @TextAnswer(200, 'Accepted', {
    lsn: {
      description: "This member's received/replayed WAL position in bytes (absent before its first reading)",
      schema: { type: 'integer' },
    },
  })
  @TextAnswer(500, 'Running as a leader')
  @TextAnswer(502, 'failsafe mode is not enabled')
  @BodyRefusals('1 MiB', 'Request body must be a JSON object')
  failsafe(@Body(failsafeBody) call: FailsafeCall, @Res() reply: FastifyReply): Promise<void> {
    return answerText(reply, () => this.operations.acceptFailsafe(call));
  }

  @Post('reinitialize')
  @ApiOperation({ summary: 'Reclone this replica from the leader (spec 4.11)' })
  @ApiBody({ type: ReinitializeBody, required: false })
  @TextAnswer(200, 'reinitialize started')
  @TextAnswer(503, 'I am the leader, can not reinitialize')
  @BodyRefusals('1 MiB', 'force: must be true or false')
  reinitialize(
    @Body(reinitializeBody) body: ValidatedBody<ReinitializeBody>,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    return answerText(reply, () => this.operations.reinitialize(parseReinitialize(body)));
  }

  @Patch('config')
  @ApiOperation({ summary: 'Merge a change into the dynamic configuration (spec 4.6)' })
  @ApiBody({
    type: DynamicConfigDto,
    description: 'A subset of the configuration, merged into it; `null` removes a key.',
  })
  @JsonAnswer(
    200,
    'The complete new configuration; keys stored but not acted on come back as `Warning: 299` headers.',
    DynamicConfigDto,
  )
  @ErrorAnswers(
    [409, 'The configuration changed concurrently; read it again and retry.'],
    [503, 'etcd is not accessible, or holds no configuration yet.'],
  )
  @BodyRefusals('64 KiB')
  async patchConfig(@Body(ConfigBodyPipe) write: ConfigWrite, @Res() reply: FastifyReply): Promise<void> {
    answerConfig(reply, await this.operations.patchConfig(write));
  }

  @Put('config')
  @ApiOperation({ summary: 'Replace the dynamic configuration (spec 4.6)' })
  @ApiBody({ type: DynamicConfigDto, description: 'The whole configuration.' })
  @JsonAnswer(
    200,
    'The new configuration; keys stored but not acted on come back as `Warning: 299` headers.',
    DynamicConfigDto,
  )
  @ErrorAnswers(
    [409, 'The configuration changed concurrently; read it again and retry.'],
    [503, 'etcd is not accessible.'],
  )
  @BodyRefusals('64 KiB')
  async putConfig(@Body(ConfigBodyPipe) write: ConfigWrite, @Res() reply: FastifyReply): Promise<void> {
    answerConfig(reply, await this.operations.putConfig(write));
  }

  private handover(
    kind: 'switchover' | 'failover',
    body: ValidatedBody<SwitchoverBody>,
    reply: FastifyReply,
  ): Promise<void> {
    const { paused, now } = this.operations.requestContext();
    return answerText(reply, () => this.operations.switchover(parseSwitchover(kind, body, paused, now), kind));
  }
}
