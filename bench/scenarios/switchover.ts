import { BenchCluster } from '../lib/cluster';
import { waitHealthy } from '../lib/health';
import { httpCode, httpPost } from '../lib/http';
import { streamingReplicas } from '../lib/sql';
import { readStatorEvents } from '../lib/etcd-observer';
import { GapReport, WriteProbe } from '../lib/write-probe';
import { loadAverage, log, now, pollUntil, sleep } from '../lib/util';

export interface SwitchoverRun {
  kind: string;
  from: string;
  to: string;
  postStatus: number;
  postBody: string;
  /** From sending the POST until the candidate first answers 200 on /primary (polled every 20 ms). */
  candidatePrimaryMs: number;
  /** Until the POST's answer arrived. */
  postReturnedMs: number;
  /** postReturnedMs − candidatePrimaryMs. */
  postAfterPrimaryMs: number;
  /** Until the new leader's pg_stat_replication shows the old leader streaming (polled every 50 ms). */
  oldLeaderStreamingMs: number;
  /** Until every node is healthy again (see health.ts), polled every 100 ms. */
  healthyMs: number;
  writes: GapReport;
  loadBefore: string;
  /** Stator only: what the event log recorded from the POST until healthy, `+ms node type from→to (cause)`. */
  timeline: string[];
}

/** Scenario 2: one planned switchover (POST /switchover to the leader with leader and candidate). */
export async function switchover(cluster: BenchCluster, runIndex: number): Promise<SwitchoverRun> {
  const { leader } = await waitHealthy(cluster, 120_000);
  const replicas = cluster.nodes.filter((n) => n !== leader);
  const candidate = replicas[runIndex % replicas.length];
  const probe = new WriteProbe(cluster.nodes.map((n) => n.pgPort));
  probe.start(120_000);
  try {
    if ((await probe.waitForAckAfter(now(), 10_000)) === null)
      throw new Error(`${cluster.label}: the write client cannot write`);
    await sleep(500);
    const loadBefore = loadAverage();
    const t0 = now();
    const post = httpPost(
      `${leader.apiUrl}/switchover`,
      { leader: leader.name, candidate: candidate.name },
      60_000,
    ).then((r) => ({ ...r, at: now() }));
    const primaryAt = pollUntil(
      async () => ((await httpCode(`${candidate.apiUrl}/primary`, 500)) === 200 ? now() : null),
      60_000,
      20,
    );
    const streamingAt = pollUntil(
      async () => ((await streamingReplicas(candidate.pgPort)).includes(leader.name) ? now() : null),
      90_000,
      50,
    );
    const healthyAt = waitHealthy(cluster, 120_000, candidate).then((h) => h.at);
    const [answer, primary, streaming, healthy] = await Promise.all([post, primaryAt, streamingAt, healthyAt]);
    await probe.waitForAckAfter(healthy, 5000);
    await sleep(200);
    const writes = probe.gapAround(t0);
    const timeline = cluster.kind === 'stator' ? await statorTimeline(cluster, t0, healthy) : [];
    const run: SwitchoverRun = {
      kind: cluster.kind,
      from: leader.name,
      to: candidate.name,
      postStatus: answer.status,
      postBody: answer.text.slice(0, 120),
      candidatePrimaryMs: primary === null ? NaN : primary - t0,
      postReturnedMs: answer.at - t0,
      postAfterPrimaryMs: primary === null ? NaN : answer.at - primary,
      oldLeaderStreamingMs: streaming === null ? NaN : streaming - t0,
      healthyMs: healthy - t0,
      writes,
      loadBefore,
      timeline,
    };
    log(
      `${cluster.kind} switchover ${run.from}→${run.to}: HTTP ${run.postStatus}, candidate 200 after ${run.candidatePrimaryMs.toFixed(0)} ms, ` +
        `POST ${run.postReturnedMs.toFixed(0)} ms, write gap ${writes.gapMs.toFixed(0)} ms, old leader streaming ${run.oldLeaderStreamingMs.toFixed(0)} ms, healthy ${run.healthyMs.toFixed(0)} ms`,
    );
    return run;
  } finally {
    await probe.stop();
  }
}

/** The events every Stator node recorded between `from` and `until`, relative to `from`. */
export async function statorTimeline(cluster: BenchCluster, from: number, until: number): Promise<string[]> {
  await sleep(500); // the recorders flush to etcd asynchronously
  try {
    const events = await readStatorEvents(cluster.etcdEndpoint, cluster.scope);
    return events
      .filter((e) => Date.parse(e.at) >= from - 1 && Date.parse(e.at) <= until)
      .map((e) => {
        const move = e.from !== null || e.to !== null ? ` ${e.from ?? '∅'}→${e.to ?? '∅'}` : '';
        return `+${Math.round(Date.parse(e.at) - from)} ms ${e.node} ${e.type}${move} (${e.cause})`;
      });
  } catch (error) {
    return [`event log not readable: ${(error as Error).message}`];
  }
}
