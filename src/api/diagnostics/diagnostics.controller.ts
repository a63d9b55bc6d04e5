import { Controller, Get, Inject } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckResult, HealthCheckService } from '@nestjs/terminus';
import { DiagnosticsDto } from '../dto/diagnostics.dto';
import { NODE_DIAGNOSTICS, NodeDiagnosticsSource } from '../../ha/node-diagnostics';
import { NodeStateService } from '../node-state.service';
import { JsonAnswer } from '../openapi/api-answers';
import { DiagnosticsIndicators } from './diagnostics-indicators';

/**
 * `GET /stator/diagnostics` (`/patroni/diagnostics` in compatibility mode): the node's self-diagnosis,
 * terminus's `{status, info, error, details}`, 200 when every indicator is up, 503 when one is down.
 * Read from memory at the moment of the request; the health checks keep their own fast path.
 */
export function diagnosticsController(productPath: 'stator' | 'patroni') {
  @ApiTags('status')
  @Controller(productPath)
  class DiagnosticsController {
    constructor(
      @Inject(HealthCheckService) readonly health: HealthCheckService,
      @Inject(DiagnosticsIndicators) readonly indicators: DiagnosticsIndicators,
      @Inject(NodeStateService) readonly state: NodeStateService,
      @Inject(NODE_DIAGNOSTICS) readonly source: NodeDiagnosticsSource,
    ) {}

    @Get('diagnostics')
    @ApiOperation({ summary: "The agent's self-diagnosis: etcd, postgres, fence, events, ha_cycle" })
    @HealthCheck({ noCache: true, swaggerDocumentation: false })
    @JsonAnswer(200, 'Every indicator is up.', DiagnosticsDto)
    @JsonAnswer(503, 'At least one indicator is down: `error` names it, `details` has all.', DiagnosticsDto)
    diagnose(): Promise<HealthCheckResult> {
      const input = { view: this.state.view(), diagnostics: this.source.diagnostics(), now: this.state.now() };
      return this.health.check(this.indicators.all(() => input));
    }
  }
  return DiagnosticsController;
}
