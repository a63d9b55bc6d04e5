import { BenchCluster, BenchNode } from '../lib/cluster';
import { killPid } from '../lib/cleanup';
import { readStatorEvents } from '../lib/etcd-observer';
import { waitHealthy } from '../lib/health';
import { BenchHaproxy, HaproxyFlavour } from '../lib/haproxy';
import { httpCode, httpPost } from '../lib/http';
import { LbTraffic, presentTags } from '../lib/lb-traffic';
import { query } from '../lib/sql';
import { loadAverage, log, now, pollUntil, sleep } from '../lib/util';

/** One cluster behind one HAProxy configuration. */
export interface LbTarget {
  cluster: BenchCluster;
  haproxy: BenchHaproxy;
  /** PgBouncer's port in front of HAProxy's primary port, when the writer goes through it. */
  pgbouncerPort?: number;
}

export interface LbRun {
  kind: string;
  flavour: HaproxyFlavour;
  /** The writer went through PgBouncer (deploy/pgbouncer.ini) in front of HAProxy's primary port. */
  viaPgbouncer: boolean;
  event: 'switchover' | 'failover';
  from: string;
  to: string;
  /** Switchover: from the POST until the candidate answers 200 on /primary. Failover: from the kill until another node does (polled every 20 ms). */
  primaryMs: number;
  /** From the POST or the kill until the first write through HAProxy acknowledged by the new leader. */
  firstWriteOnNewMs: number;
  /** Longest interval between two writes acknowledged through HAProxy, from the last one before the event on. */
  gapMs: number;
  gapStartMs: number;
  /** Reads through the replica port answered by a primary, and on which node. */
  misroutedReads: number;
  misroutedOn: string[];
  reads: number;
  failedReads: number;
  /** Writes that failed, and what the client was told ("message ×count"). */
  failedWrites: number;
  writeErrors: string[];
  acknowledged: number;
  /** Acknowledged writes the new leader does not hold once the cluster is healthy again. */
  lost: number;
  /** Failover: from restarting the killed agent until the cluster is healthy again. */
  rejoinMs: number;
  loadBefore: string;
  /** Stator: the load balancer moments and lock events recorded, relative to the event. */
  moments: string[];
}

/**
 * Waits until HAProxy routes as the cluster is: writes to the leader, reads spread over both replicas
 * and never on the leader. After a previous run Patroni's documented checks (every 3 s, rise 2) take
 * several seconds to take a rejoined node back: a run starts only with both replicas in the pool.
 */
async function settled(target: LbTarget, leader: BenchNode): Promise<void> {
  const replicas = new Set(target.cluster.nodes.filter((n) => n !== leader).map((n) => n.pgPort));
  const ok = await pollUntil(
    async () => {
      const seen = new Set<number>();
      for (let i = 0; i < 8; i++) {
        const [read] = await query<{ port: number }>(target.haproxy.replicaPort, 'SELECT inet_server_port() AS port');
        if (!replicas.has(read.port)) return false;
        seen.add(read.port);
      }
      const [write] = await query<{ port: number }>(
        target.haproxy.primaryPort,
        'SELECT inet_server_port() AS port WHERE NOT pg_is_in_recovery()',
      );
      return write?.port === leader.pgPort && seen.size === replicas.size;
    },
    60_000,
    500,
  );
  if (!ok)
    throw new Error(
      `${target.cluster.label}: HAProxy (${target.haproxy.flavour}) did not settle on the cluster's roles within 60 s`,
    );
}

async function prepare(target: LbTarget, tag: string): Promise<{ leader: BenchNode; traffic: LbTraffic }> {
  const { leader } = await waitHealthy(target.cluster, 120_000);
  await settled(target, leader);
  const traffic = new LbTraffic(
    target.pgbouncerPort ?? target.haproxy.primaryPort,
    target.haproxy.replicaPort,
    tag,
    target.pgbouncerPort !== undefined,
  );
  if ((await traffic.waitForAck(now(), leader.pgPort, 10_000)) === null) {
    await traffic.stop();
    throw new Error(`${target.cluster.label}: no write through ${target.pgbouncerPort ? 'PgBouncer and ' : ''}HAProxy`);
  }
  await sleep(500);
  return { leader, traffic };
}

/** A planned switchover (POST /switchover {leader, candidate}) with a writer and a reader through HAProxy. */
export async function lbSwitchover(target: LbTarget, index: number): Promise<LbRun> {
  const { cluster } = target;
  const { leader, traffic } = await prepare(
    target,
    `${cluster.kind}-${target.haproxy.flavour}-so-${index}-${Date.now()}`,
  );
  const replicas = cluster.nodes.filter((n) => n !== leader);
  const candidate = replicas[index % replicas.length];
  try {
    const loadBefore = loadAverage();
    const t0 = now();
    const post = httpPost(`${leader.apiUrl}/switchover`, { leader: leader.name, candidate: candidate.name }, 60_000);
    const primaryAt = pollUntil(
      async () => ((await httpCode(`${candidate.apiUrl}/primary`, 500)) === 200 ? now() : null),
      60_000,
      20,
    );
    const answer = await post;
    if (answer.status !== 200) throw new Error(`${cluster.label}: switchover answered ${answer.status} ${answer.text}`);
    const first = await traffic.waitForAck(t0, candidate.pgPort, 60_000);
    const healthy = await waitHealthy(cluster, 120_000, candidate);
    await sleep(300);
    await traffic.stop();
    return await finish(target, 'switchover', leader, candidate, traffic, t0, {
      primaryAt: await primaryAt,
      first,
      loadBefore,
      rejoinMs: NaN,
      until: healthy.at,
    });
  } finally {
    await traffic.stop();
  }
}

/** kill -9 of the leader's agent and postmaster with a writer and a reader through HAProxy; then the agent is started again. */
export async function lbFailover(target: LbTarget, index: number): Promise<LbRun> {
  const { cluster } = target;
  const { leader, traffic } = await prepare(
    target,
    `${cluster.kind}-${target.haproxy.flavour}-fo-${index}-${Date.now()}`,
  );
  const others = cluster.nodes.filter((n) => n !== leader);
  let killed = false;
  try {
    // A random moment of the HA loop, as the failover scenario does.
    await sleep(Math.random() * cluster.timing.loopWait * 1000);
    const postmaster = leader.postmasterPid();
    if (!postmaster || !leader.agentPid())
      throw new Error(`${cluster.label}: ${leader.name} has no agent or postmaster PID`);
    const loadBefore = loadAverage();
    const t0 = now();
    killed = true;
    leader.killAgentNow();
    killPid(postmaster);
    const limit = cluster.timing.ttl * 1000 + 30_000;
    const winner = await pollUntil(
      async () => {
        const codes = await Promise.all(others.map((n) => httpCode(`${n.apiUrl}/primary`, 500)));
        const i = codes.findIndex((c) => c === 200);
        return i >= 0 ? { node: others[i], at: now() } : null;
      },
      limit,
      20,
    );
    if (!winner) throw new Error(`${cluster.label}: no new leader within ${limit} ms`);
    const first = await traffic.waitForAck(t0, winner.node.pgPort, limit);
    await sleep(300);
    await traffic.stop();
    await leader.agentExited();
    const restarted = now();
    leader.startAgent();
    killed = false;
    const healthy = await waitHealthy(cluster, 180_000, winner.node);
    return await finish(target, 'failover', leader, winner.node, traffic, t0, {
      primaryAt: winner.at,
      first,
      loadBefore,
      rejoinMs: healthy.at - restarted,
      until: healthy.at,
    });
  } finally {
    await traffic.stop();
    // A failed run must not leave the cluster a node short for the next ones.
    if (killed && !leader.agentPid()) {
      await leader.agentExited();
      leader.startAgent();
    }
  }
}

async function finish(
  target: LbTarget,
  event: LbRun['event'],
  from: BenchNode,
  to: BenchNode,
  traffic: LbTraffic,
  t0: number,
  at: { primaryAt: number | null; first: { at: number } | null; loadBefore: string; rejoinMs: number; until: number },
): Promise<LbRun> {
  const { cluster } = target;
  const present = await presentTags(
    to.pgPort,
    traffic.acked.map((w) => w.tag),
  );
  const portName = new Map(cluster.nodes.map((n) => [n.pgPort, n.name]));
  const gap = traffic.gapFrom(t0);
  const run: LbRun = {
    kind: cluster.kind,
    flavour: target.haproxy.flavour,
    viaPgbouncer: target.pgbouncerPort !== undefined,
    event,
    from: from.name,
    to: to.name,
    primaryMs: at.primaryAt === null ? NaN : at.primaryAt - t0,
    firstWriteOnNewMs: at.first === null ? NaN : at.first.at - t0,
    gapMs: gap.gapMs,
    gapStartMs: gap.gapStartMs,
    misroutedReads: traffic.misrouted.length,
    misroutedOn: traffic.misrouted.map((r) => `${portName.get(r.port) ?? r.port}@+${Math.round(r.at - t0)}ms`),
    reads: traffic.reads,
    failedReads: traffic.failedReads,
    failedWrites: traffic.failedWrites,
    writeErrors: [...traffic.writeErrors].map(([message, count]) => `${message} ×${count}`),
    acknowledged: traffic.acked.length,
    lost: traffic.acked.filter((w) => !present.has(w.tag)).length,
    rejoinMs: at.rejoinMs,
    loadBefore: at.loadBefore,
    moments: cluster.kind === 'stator' ? await statorMoments(cluster, t0, at.until) : [],
  };
  log(
    `${run.kind}/${run.flavour}${run.viaPgbouncer ? '+pgbouncer' : ''} ${event} ${run.from}→${run.to}: /primary 200 +${run.primaryMs.toFixed(0)} ms, first write on it +${run.firstWriteOnNewMs.toFixed(0)} ms, ` +
      `write gap ${run.gapMs.toFixed(0)} ms, misrouted reads ${run.misroutedReads} of ${run.reads}, failed writes ${run.failedWrites}, lost ${run.lost} of ${run.acknowledged}, load ${run.loadBefore}`,
  );
  return run;
}

/** The load balancer moments and lock events Stator recorded from `from` to `until`, relative to `from`. */
async function statorMoments(cluster: BenchCluster, from: number, until: number): Promise<string[]> {
  await sleep(300); // the recorders flush to etcd asynchronously
  try {
    const events = await readStatorEvents(cluster.etcdEndpoint, cluster.scope);
    return events
      .filter((e) => Date.parse(e.at) >= from - 1 && Date.parse(e.at) <= until)
      .filter(
        (e) =>
          e.type.startsWith('load_balancer.') ||
          ['leader.acquired', 'leader.released', 'leader.promoted'].includes(e.type),
      )
      .map((e) => `+${Math.round(Date.parse(e.at) - from)} ms ${e.node} ${e.type} (${e.cause})`);
  } catch (error) {
    return [`event log not readable: ${(error as Error).message}`];
  }
}
