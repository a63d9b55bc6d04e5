import { Controller, Get, Header, Inject } from '@nestjs/common';
import { LazyModuleLoader } from '@nestjs/core';
import { ApiOperation, ApiTags } from '../openapi-decorators';
import type { HealthCheckResult } from '@nestjs/terminus';
import { DiagnosticsDto } from '../dto/diagnostics.dto';
import { NODE_DIAGNOSTICS, NodeDiagnosticsSource } from '../../ha/node-diagnostics';
import { NodeStateService } from '../node-state.service';
import { JsonAnswer } from '../openapi/api-answers';
import type { DiagnosticsRunner } from './diagnostics-terminus.module';

/**
 * `GET /stator/diagnostics` (`/patroni/diagnostics` in compatibility mode): the node's self-diagnosis,
 * terminus's `{status, info, error, details}`, 200 when every indicator is up, 503 when one is down.
 * Read from memory at the moment of the request; the health checks keep their own fast path. Terminus
 * itself is loaded on the first request (see DiagnosticsTerminusModule).
 */
export function diagnosticsController(productPath: 'stator' | 'patroni') {
  @ApiTags('status')
  @Controller(productPath)
  class DiagnosticsController {
    private runner: Promise<DiagnosticsRunner> | null = null;

    constructor(
      @Inject(LazyModuleLoader) readonly modules: LazyModuleLoader,
      @Inject(NodeStateService) readonly state: NodeStateService,
      @Inject(NODE_DIAGNOSTICS) readonly source: NodeDiagnosticsSource,
    ) {}

    @Get('diagnostics')
    @Header('Cache-Control', 'no-cache, no-store, must-revalidate')
    @ApiOperation({ summary: "The agent's self-diagnosis: etcd, postgres, fence, events, ha_cycle" })
    @JsonAnswer(200, 'Every indicator is up.', DiagnosticsDto)
    @JsonAnswer(503, 'At least one indicator is down: `error` names it, `details` has all.', DiagnosticsDto)
    async diagnose(): Promise<HealthCheckResult> {
      const runner = await this.loadRunner();
      return runner.diagnose(() => ({
        view: this.state.view(),
        diagnostics: this.source.diagnostics(),
        now: this.state.now(),
      }));
    }

    @Get('memory')
    @Header('Cache-Control', 'no-cache, no-store, must-revalidate')
    @ApiOperation({
      summary:
        'What the HA cycle remembers between cycles (its memory machine; configurations as digests), as `stator audit` replays it',
    })
    @JsonAnswer(200, "The memory machine's context.", { type: 'object' } as never)
    memory(): unknown {
      return this.state.view().memory ?? null;
    }

    private loadRunner(): Promise<DiagnosticsRunner> {
      if (!this.runner) {
        const loading = (async () => {
          const { DiagnosticsTerminusModule, DiagnosticsRunner: Runner } =
            await import('./diagnostics-terminus.module');
          const moduleRef = await this.modules.load(() => DiagnosticsTerminusModule);
          return moduleRef.get(Runner);
        })();
        // A failed load is tried again by the next request.
        loading.catch(() => (this.runner = null));
        this.runner = loading;
      }
      return this.runner;
    }
  }
  return DiagnosticsController;
}
