import { BenchCluster, primaries } from '../lib/cluster';
import { killPid } from '../lib/cleanup';
import { waitHealthy } from '../lib/health';
import { GapReport, WriteProbe } from '../lib/write-probe';
import { loadAverage, log, now, pollUntil, sleep } from '../lib/util';

export interface PgCrashRun {
  kind: string;
  node: string;
  /** From the postmaster's SIGKILL to the first acknowledged insert after the outage. */
  writesBackMs: number;
  writes: GapReport;
  /** Who answers 200 on /primary afterwards. */
  leaderAfter: string;
  /** Until the whole cluster is healthy again (replicas streaming again). */
  healthyMs: number;
  loadBefore: string;
}

/** Scenario 4: SIGKILL of the leader's postmaster, the agent staying alive. */
export async function pgCrash(cluster: BenchCluster): Promise<PgCrashRun> {
  const { leader } = await waitHealthy(cluster, 120_000);
  const postmaster = leader.postmasterPid();
  if (!postmaster) throw new Error(`${cluster.label}: no postmaster PID for ${leader.name}`);
  const probe = new WriteProbe(cluster.nodes.map((n) => n.pgPort));
  probe.start(120_000);
  try {
    if ((await probe.waitForAckAfter(now(), 10_000)) === null)
      throw new Error(`${cluster.label}: the write client cannot write`);
    await sleep(500 + Math.random() * 1000 * cluster.timing.loopWait);
    const loadBefore = loadAverage();
    const t0 = now();
    killPid(postmaster);
    // An insert acknowledged just after the kill may have been committed before it: wait for the
    // outage to show (a failed attempt), then for the next acknowledged insert.
    const failed = await pollUntil(async () => probe.firstFailureAfter(t0), 10_000, 10);
    if (failed === null) throw new Error(`${cluster.label}: writes never failed after the postmaster kill`);
    const back = await probe.waitForAckAfter(failed, 90_000);
    if (back === null) throw new Error(`${cluster.label}: writes did not come back within 90 s`);
    await sleep(300);
    const writes = probe.gapAround(t0);
    const after = await primaries(cluster);
    const healthy = await waitHealthy(cluster, 120_000);
    const run: PgCrashRun = {
      kind: cluster.kind,
      node: leader.name,
      writesBackMs: back - t0,
      writes,
      leaderAfter: after.map((n) => n.name).join(',') || 'none',
      healthyMs: healthy.at - t0,
      loadBefore,
    };
    log(
      `${cluster.kind} postmaster kill on ${leader.name}: writes back after ${run.writesBackMs.toFixed(0)} ms (gap ${writes.gapMs.toFixed(0)} ms), leader after: ${run.leaderAfter}, healthy after ${run.healthyMs.toFixed(0)} ms`,
    );
    return run;
  } finally {
    await probe.stop();
  }
}
