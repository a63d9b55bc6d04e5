import type { Kind } from './lib/cluster';
import type { EtcdLoad } from './lib/etcd-metrics';
import type { ProcessUsage } from './lib/fleet';
import type { FleetOptions } from './lib/fleet-options';
import type { FailoverRun } from './scenarios/failover';
import type { FleetScenarioResults } from './lib/fleet-scenarios';

/** What `npm run fleet-bench` measures: one fleet's run, and the whole report (written by fleet-run, read by fleet-render). */
export interface FleetRun {
  kind: Kind;
  clusters: number;
  agents: number;
  /** From the first cluster's start until every cluster was healthy, ms. */
  startMs: number;
  /** The settled window's figures: absent when the run left the window out (`--scenarios` without `window`). */
  load?: EtcdLoad;
  /** Keys written in the window by role (`members/*`, `leader`, `status`, `events`...), per minute for the fleet. */
  writesPerMinuteByRole?: Record<string, number>;
  usage?: ProcessUsage;
  /** etcd's load divided among the agents, per minute. */
  perAgentPerMinute?: { requests: number; bytesIn: number; bytesOut: number };
  /** kill -9 of fleet-1's leader agent and postmaster while the others run (null: it failed, see failoverError). */
  failover: FailoverRun | null;
  failoverError?: string;
  /** Every failover sample (`--failover-samples`), the first one being `failover`; absent in older results. */
  failovers?: FailoverRun[];
  /** Clusters other than fleet-1 whose leader was not the same after its failover. */
  otherLeadersMoved: number;
  /** The agent alone killed, the switchover storm, the etcd leader killed (absent in older results). */
  scenarios?: FleetScenarioResults;
  /** From the etcd cluster's start until the last scenario ended, s; the stop is a few more (absent in older results). */
  totalSeconds?: number;
  loadBefore: string;
}

/** A run whose settled window was measured. */
export type WindowedFleetRun = FleetRun &
  Required<Pick<FleetRun, 'load' | 'writesPerMinuteByRole' | 'usage' | 'perAgentPerMinute'>>;

export function windowedRuns(runs: FleetRun[]): WindowedFleetRun[] {
  return runs.filter((run): run is WindowedFleetRun => run.load !== undefined && run.usage !== undefined);
}

export interface FleetResults {
  date: string;
  startedAt: string;
  durationS: number;
  options: FleetOptions;
  environment: Record<string, string>;
  runs: FleetRun[];
  /** The plot's file name beside the report, or why there is none (absent in older results). */
  plot?: { file: string } | { error: string };
  errors: string[];
}
