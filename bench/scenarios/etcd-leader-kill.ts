import { EtcdCluster, EtcdMember } from '../../scripts/lib/etcd-cluster';
import { BenchCluster, BenchNode } from '../lib/cluster';
import { waitHealthy } from '../lib/health';
import { httpCode } from '../lib/http';
import { createWriteTable, missingIds, WriteProbe } from '../lib/write-probe';
import { log, now, pollUntil, sleep } from '../lib/util';

/** A write gap longer than this counts a cluster as having lost writes for a while (issue 35). */
export const GAP_THRESHOLD_MS = 1000;

/** One cluster through the etcd leader's death. */
export interface EtcdKillClusterRun {
  scope: string;
  leaderBefore: string;
  /** '' when no healthy leader came back within the timeout. */
  leaderAfter: string;
  /** Its primary answered 503 on /primary at least once (polled every 500 ms): demoted, if only for a while. */
  demoted: boolean;
  gapMs: number;
  lostWrites: number;
}

/** kill -9 of the etcd member that leads, with the whole fleet running; restarted once the observation ends. */
export interface EtcdLeaderKill {
  killedMember: string;
  /** From the kill until another member reports being leader (polled every 100 ms; NaN: not seen). */
  newEtcdLeaderMs: number;
  /** How long the fleet was watched with the member down, then how long it took to serve reads again. */
  observedMs: number;
  restartMs: number;
  clusters: number;
  demoted: number;
  leadersMoved: number;
  gapOverThreshold: number;
  maxGapMs: number;
  lostWrites: number;
  runs: EtcdKillClusterRun[];
}

const HEALTHY_TIMEOUT_MS = 180_000;

/**
 * The etcd leader killed: a client writes to every cluster (libpq's read-write host selection over its nodes), the
 * leading etcd member is killed with SIGKILL, the fleet is watched for `observeMs` (each cluster's primary polled on
 * /primary), the member is started again on its data, and each cluster's final primary is asked for every write its
 * client saw acknowledged.
 */
export async function etcdLeaderKill(
  clusters: BenchCluster[],
  etcd: EtcdCluster,
  observeMs: number,
): Promise<EtcdLeaderKill> {
  const plans = await Promise.all(
    clusters.map(async (cluster) => {
      const { leader } = await waitHealthy(cluster, HEALTHY_TIMEOUT_MS);
      await createWriteTable(leader.pgPort);
      return { cluster, leader, probe: new WriteProbe(cluster.nodes.map((node) => node.pgPort)), demoted: false };
    }),
  );
  for (const plan of plans) plan.probe.start(observeMs + HEALTHY_TIMEOUT_MS + 60_000);
  let killed: EtcdMember | null = null;
  try {
    const ready = await Promise.all(plans.map((plan) => plan.probe.waitForAckAfter(now(), 10_000)));
    const mute = plans.filter((_plan, i) => ready[i] === null).map((plan) => plan.cluster.scope);
    if (mute.length) throw new Error(`the write client cannot write to ${mute.join(', ')}`);
    const member = await etcd.leader();
    const t0 = now();
    await member.kill();
    killed = member;
    log(
      `${clusters[0]?.kind}: etcd leader ${member.name} killed with ${clusters.length} clusters running; watching ${(observeMs / 1000).toFixed(0)} s`,
    );
    const newLeaderAt = pollUntil(async () => ((await etcd.leader()) !== member ? now() : null), observeMs, 100);
    // An explicit 503 is a demotion; no answer within the timeout (a busy machine) is not counted as one.
    const deadline = t0 + observeMs;
    while (now() < deadline) {
      const codes = await Promise.all(plans.map((plan) => httpCode(`${plan.leader.apiUrl}/primary`, 1000)));
      codes.forEach((code, i) => {
        if (code === 503) plans[i].demoted = true;
      });
      await sleep(500);
    }
    const elected = await newLeaderAt;
    const restartStarted = now();
    await member.restart();
    killed = null;
    const restartMs = now() - restartStarted;
    const runs = await Promise.all(
      plans.map((plan) => settle(plan.cluster, plan.leader, plan.probe, plan.demoted, t0)),
    );
    const result: EtcdLeaderKill = {
      killedMember: member.name,
      newEtcdLeaderMs: elected === null ? NaN : elected - t0,
      observedMs: observeMs,
      restartMs,
      clusters: clusters.length,
      demoted: runs.filter((run) => run.demoted).length,
      leadersMoved: runs.filter((run) => run.leaderAfter !== run.leaderBefore).length,
      gapOverThreshold: runs.filter((run) => run.gapMs > GAP_THRESHOLD_MS).length,
      maxGapMs: Math.max(0, ...runs.map((run) => run.gapMs)),
      lostWrites: runs.reduce((total, run) => total + run.lostWrites, 0),
      runs,
    };
    log(
      `${clusters[0]?.kind}: etcd leader ${member.name} killed: new etcd leader after ${result.newEtcdLeaderMs.toFixed(0)} ms; ` +
        `${result.demoted} of ${result.clusters} primaries demoted, ${result.leadersMoved} leaders moved, ${result.gapOverThreshold} write gaps over ${GAP_THRESHOLD_MS} ms ` +
        `(max ${result.maxGapMs.toFixed(0)} ms), ${result.lostWrites} acknowledged writes lost; member back in ${restartMs.toFixed(0)} ms`,
    );
    return result;
  } finally {
    await Promise.all(plans.map((plan) => plan.probe.stop()));
    // The fleet's etcd must have its three members for what follows, even after a failed run.
    if (killed)
      await killed
        .restart()
        .catch((error: Error) => log(`etcd member ${killed?.name} did not come back: ${error.message}`));
  }
}

async function settle(
  cluster: BenchCluster,
  leaderBefore: BenchNode,
  probe: WriteProbe,
  demoted: boolean,
  t0: number,
): Promise<EtcdKillClusterRun> {
  const healthy = await waitHealthy(cluster, HEALTHY_TIMEOUT_MS).then(
    (h) => h,
    () => null,
  );
  if (healthy) await probe.waitForAckAfter(healthy.at, 5000);
  const writes = probe.gapAround(t0);
  const lost = healthy
    ? await missingIds(healthy.leader.pgPort, [...probe.ackedIds]).then(
        (ids) => ids.length,
        () => NaN,
      )
    : NaN;
  return {
    scope: cluster.scope,
    leaderBefore: leaderBefore.name,
    leaderAfter: healthy?.leader.name ?? '',
    demoted,
    gapMs: writes.gapMs,
    lostWrites: lost,
  };
}
