import type { CpuReading, ModuleCost, RssReading } from './scenarios/footprint';
import type { FailoverRun } from './scenarios/failover';
import type { HealthCheckRun } from './scenarios/health-checks';
import type { SideBySideRun } from './scenarios/health-side-by-side';
import type { PgCrashRun } from './scenarios/pg-crash';
import type { SwitchoverRun } from './scenarios/switchover';
import type { ReferenceRun } from './lib/reference-servers';

/** How `npm run bench` runs (BENCH_QUICK and the BENCH_* variables): written by run.ts, quoted by render.ts. */
export interface BenchSettings {
  quick: boolean;
  wrkSeconds: number;
  idleSeconds: number;
  switchoverRuns: number;
  crashRuns: number;
  baselinePairs: number;
  failoverRuns: number;
  ttl30: boolean;
  budgetMs: number;
}

/** What `npm run bench` measured: written by run.ts as JSON, rendered by render.ts. */
export interface BenchResults {
  date: string;
  startedAt: string;
  durationS: number;
  settings: BenchSettings;
  environment: Record<string, string>;
  patroni: boolean;
  notes: string[];
  health: HealthCheckRun[];
  /** The same wrk load on do-nothing servers (node:http, Fastify, Nest on Fastify). */
  reference: ReferenceRun[];
  /** `/primary` on this checkout's leader and on BENCH_BASELINE's, alternating. */
  healthBaseline?: SideBySideRun[];
  rssIdle: RssReading[];
  rssAfterLoad: RssReading[];
  idleCpu: CpuReading[];
  /** Idle CPU again once the health-check load is over and the agents have settled (JIT, GC). */
  idleCpuSettled?: CpuReading[];
  moduleCosts: ModuleCost[];
  switchovers: SwitchoverRun[];
  crashes: PgCrashRun[];
  failovers: FailoverRun[];
  errors: string[];
}
