import type { Timing } from './lib/cluster';
import type { LbRun } from './scenarios/load-balancer';

/** What `npm run lb-bench` measured: written by lb-run.ts, rendered by lb-render.ts. */
export interface LbResults {
  date: string;
  startedAt: string;
  durationS: number;
  runs: { stator: number; patroni: number };
  /** load_balancer_drain_ms of the Stator cluster. */
  statorDrainMs: number;
  timing: Timing;
  environment: Record<string, string>;
  targets: string[];
  /** The writer went through PgBouncer in front of HAProxy's primary port. */
  pgbouncer: boolean;
  switchovers: LbRun[];
  failovers: LbRun[];
  errors: string[];
}
