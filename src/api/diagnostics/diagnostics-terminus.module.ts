import { Injectable, Module } from '@nestjs/common';
import { HealthCheckResult, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { DiagnosisInput, DiagnosticsIndicators } from './diagnostics-indicators';

/** Runs the five indicators through terminus's HealthCheckService: the result, or its 503 with the same body. */
@Injectable()
export class DiagnosticsRunner {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: DiagnosticsIndicators,
  ) {}

  diagnose(input: () => DiagnosisInput): Promise<HealthCheckResult> {
    return this.health.check(this.indicators.all(input));
  }
}

/**
 * @nestjs/terminus and the indicators, loaded by the diagnostics controller on its first request
 * (Nest's LazyModuleLoader): terminus ships as ES modules whose loading costs an agent about 14 MiB,
 * for an endpoint an operator calls now and then.
 */
@Module({
  imports: [TerminusModule.forRoot({ logger: false })],
  providers: [DiagnosticsIndicators, DiagnosticsRunner],
})
export class DiagnosticsTerminusModule {}
