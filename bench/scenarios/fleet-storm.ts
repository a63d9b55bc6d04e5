import { BenchCluster, BenchNode } from '../lib/cluster';
import { EtcdWriteLatency, EtcdWriteProbe } from '../lib/etcd-latency';
import { waitHealthy } from '../lib/health';
import { httpPost } from '../lib/http';
import { createWriteTable, FailureSpan, missingIds, WriteProbe } from '../lib/write-probe';
import { log, now, pollUntil, sleep, spread, Spread } from '../lib/util';

/** One cluster's part of the storm. */
export interface StormClusterRun {
  scope: string;
  from: string;
  to: string;
  postStatus: number;
  /** The POST's answer, shortened (the reason when it failed). */
  postBody: string;
  /** Longest interval without an acknowledged write from the POSTs on, ms. */
  gapMs: number;
  /** When that gap began and the POST's answer came, from the POSTs, ms. */
  gapStartMs?: number;
  postAnsweredMs?: number;
  /** What the write client saw meanwhile: runs of the same error, from the POSTs, ms (for taking a slow one apart). */
  failureSpans?: FailureSpan[];
  /** Acknowledged writes the new primary does not hold. */
  lostWrites: number;
  /** Why the switchover counts as failed: not answered 200, or the candidate not the healthy leader in time. */
  failure?: string;
}

/** Every cluster of the fleet switched over at once (`POST /switchover` on each leader, in parallel). */
export interface SwitchoverStorm {
  clusters: number;
  failed: number;
  /** Write gaps of the clusters whose switchover succeeded. */
  gapMs: Spread;
  slowest: { scope: string; gapMs: number } | null;
  lostWrites: number;
  /** From the POSTs until every cluster was healthy again (the failed ones under any leader), ms. */
  allHealthyMs: number;
  /** PostgreSQL connections the write clients opened meanwhile: the bench's own load on the machine. */
  writeClientConnections?: number;
  /** A small etcd write every 100 ms from the POSTs until every cluster was healthy: what the agents' writes waited. */
  etcdWriteMs?: EtcdWriteLatency;
  runs: StormClusterRun[];
}

const POST_TIMEOUT_MS = 60_000;
const HEALTHY_TIMEOUT_MS = 120_000;
/**
 * How often each cluster is checked for health during the storm. Every check is six HTTP requests and a new
 * PostgreSQL connection (scram: a backend forked, PBKDF2 on both sides); at the default 100 ms, twenty clusters
 * polled at once took the 2-core machine: the bench's own connections timed out for minutes while every agent
 * said its cluster was healthy again (2026-11-29).
 */
const HEALTH_POLL_MS = 1000;
/**
 * The write clients' reconnection backoff (50 ms doubling up to this), as a client's pool waits between attempts.
 * Without it a client tried three nodes at every 50 ms tick; counted, twenty of them opened 1,700 connections over a
 * 304 s storm (2026-11-29): not what loaded the machine, but the bench's load now stays bounded by design.
 */
const STORM_RECONNECT_MAX_MS = 400;
/** Before the POSTs: right after a fleet of 20 came up, a backend took seconds to fork, and 10 s were too few. */
const FIRST_WRITE_TIMEOUT_MS = 30_000;

/**
 * The storm: each cluster's leader is asked to hand over to its first replica, every cluster at the same moment,
 * while a client writes to each cluster (libpq's read-write host selection over its three nodes). A cluster's
 * switchover failed when the POST did not answer 200 or the candidate was not the healthy leader within 2 minutes.
 */
export async function switchoverStorm(clusters: BenchCluster[], etcdEndpoint?: string): Promise<SwitchoverStorm> {
  const plans = await Promise.all(
    clusters.map(async (cluster) => {
      const { leader } = await waitHealthy(cluster, HEALTHY_TIMEOUT_MS, undefined, HEALTH_POLL_MS);
      await createWriteTable(leader.pgPort);
      const candidate = cluster.nodes.find((node) => node !== leader)!;
      return {
        cluster,
        leader,
        candidate,
        probe: new WriteProbe(
          cluster.nodes.map((node) => node.pgPort),
          STORM_RECONNECT_MAX_MS,
        ),
      };
    }),
  );
  for (const plan of plans) plan.probe.start(POST_TIMEOUT_MS + HEALTHY_TIMEOUT_MS + 30_000);
  try {
    const ready = await Promise.all(plans.map((plan) => plan.probe.waitForAckAfter(now(), FIRST_WRITE_TIMEOUT_MS)));
    const mute = plans.filter((_plan, i) => ready[i] === null).map((plan) => plan.cluster.scope);
    if (mute.length) throw new Error(`the write client cannot write to ${mute.join(', ')}`);
    const connections = () => plans.reduce((total, plan) => total + plan.probe.opened.connections, 0);
    const connectionsBefore = connections();
    const etcdProbe = etcdEndpoint ? new EtcdWriteProbe(etcdEndpoint) : null;
    etcdProbe?.start();
    const t0 = now();
    const runs = await Promise.all(
      plans.map((plan) => switchOne(plan.cluster, plan.leader, plan.candidate, plan.probe, t0)),
    );
    const allHealthyMs = now() - t0;
    const etcdWriteMs = await etcdProbe?.stop();
    const succeeded = runs.filter((run) => !run.failure);
    const slowest = succeeded.reduce<StormClusterRun | null>(
      (worst, run) => (!worst || run.gapMs > worst.gapMs ? run : worst),
      null,
    );
    const storm: SwitchoverStorm = {
      clusters: clusters.length,
      failed: runs.length - succeeded.length,
      gapMs: spread(succeeded.map((run) => run.gapMs)),
      slowest: slowest && { scope: slowest.scope, gapMs: slowest.gapMs },
      lostWrites: runs.reduce((total, run) => total + run.lostWrites, 0),
      allHealthyMs,
      writeClientConnections: connections() - connectionsBefore,
      ...(etcdWriteMs && { etcdWriteMs }),
      runs,
    };
    log(
      `${clusters[0]?.kind} switchover storm of ${clusters.length} clusters: ${storm.failed} failed; write gap median ${storm.gapMs.median.toFixed(0)} ms, ` +
        `max ${storm.gapMs.max.toFixed(0)} ms (${storm.slowest?.scope ?? '—'}); ${storm.lostWrites} acknowledged writes lost; all healthy after ${allHealthyMs.toFixed(0)} ms; ` +
        `the write clients opened ${storm.writeClientConnections} connections` +
        (etcdWriteMs
          ? `; etcd writes meanwhile: median ${etcdWriteMs.median.toFixed(0)} ms, p90 ${etcdWriteMs.p90.toFixed(0)} ms, max ${etcdWriteMs.max.toFixed(0)} ms (${etcdWriteMs.n} answered, ${etcdWriteMs.failed} not)`
          : ''),
    );
    for (const run of runs.filter((r) => r.failure)) log(`  ${run.scope}: switchover failed: ${run.failure}`);
    return storm;
  } finally {
    await Promise.all(plans.map((plan) => plan.probe.stop()));
  }
}

async function switchOne(
  cluster: BenchCluster,
  leader: BenchNode,
  candidate: BenchNode,
  probe: WriteProbe,
  t0: number,
): Promise<StormClusterRun> {
  const answer = await httpPost(
    `${leader.apiUrl}/switchover`,
    { leader: leader.name, candidate: candidate.name },
    POST_TIMEOUT_MS,
  );
  const postAnsweredMs = now() - t0;
  let failure: string | undefined =
    answer.status === 200
      ? undefined
      : `POST /switchover answered ${answer.status || 'nothing'}: ${answer.text.slice(0, 120)}`;
  // Whatever the answer, the cluster must be healthy again before the next scenario: under the candidate, or any leader.
  let newLeader: BenchNode | null;
  try {
    newLeader = (await waitHealthy(cluster, HEALTHY_TIMEOUT_MS, failure ? undefined : candidate, HEALTH_POLL_MS))
      .leader;
  } catch (error) {
    const why = /\(last: (.*)\)$/.exec((error as Error).message)?.[1];
    failure ??= `${candidate.name} not the healthy leader within ${HEALTHY_TIMEOUT_MS / 1000} s${why ? ` (${why})` : ''}`;
    newLeader = await waitHealthy(cluster, HEALTHY_TIMEOUT_MS, undefined, HEALTH_POLL_MS).then(
      (h) => h.leader,
      () => null,
    );
  }
  const settled = now();
  await probe.waitForAckAfter(settled, 5000);
  await sleep(200);
  const writes = probe.gapAround(t0);
  // Read again for up to 30 s: on the crowded machine a single read's connection timed out (lost writes unknown).
  const missing = newLeader
    ? await pollUntil(() => missingIds(newLeader.pgPort, [...probe.ackedIds]), 30_000, 1000)
    : null;
  const lost = missing ? missing.length : NaN;
  return {
    scope: cluster.scope,
    from: leader.name,
    to: candidate.name,
    postStatus: answer.status,
    postBody: answer.text.slice(0, 120),
    gapMs: writes.gapMs,
    gapStartMs: writes.gapStartMs,
    postAnsweredMs,
    failureSpans: probe.failureSpans(t0, settled),
    lostWrites: lost,
    ...(failure && { failure }),
  };
}
