import { readFileSync } from 'node:fs';
import { BenchCluster, BenchNode } from '../lib/cluster';
import { killPid } from '../lib/cleanup';
import { LeaseAnalysis, LeaseWatcher, readLeaderKey, readStatorEvents } from '../lib/etcd-observer';
import { waitHealthy } from '../lib/health';
import { httpCode } from '../lib/http';
import { GapReport, missingIds, WriteProbe } from '../lib/write-probe';
import { loadAverage, log, now, pollUntil, sleep } from '../lib/util';

/** What happens to the leader: its agent and postmaster killed, its agent alone killed, or its agent frozen (SIGSTOP). */
export type LeaderFault = 'agent+postmaster' | 'agent' | 'frozen';
export const LEADER_FAULTS: readonly LeaderFault[] = ['agent+postmaster', 'agent', 'frozen'];
/** Runs recorded before the faults were told apart were all kills of the agent and postmaster. */
export const faultOf = (x: FailoverRun): LeaderFault => x.fault ?? 'agent+postmaster';

export interface FailoverRun {
  kind: string;
  ttl: number;
  loopWait: number;
  fault: LeaderFault;
  killed: string;
  newLeader: string;
  /** Random wait after the cluster was healthy, before the kill (a random moment of the HA loop). */
  jitterMs: number;
  /** From the kill until another node answers 200 on /primary (polled every 25 ms). */
  newPrimaryMs: number;
  writes: GapReport;
  /** Lease of the old leader, from sampling etcd (see LeaseWatcher); times relative to the kill. */
  lease: {
    expiryMs: number;
    expiryUncertaintyMs: number;
    keyGoneLowMs: number;
    keyGoneHighMs: number;
    newHolderSeenMs: number;
  };
  /** When the new leader took the lock, from its own record, relative to the kill (NaN: not found). */
  acquiredMs: number;
  promotedMs: number;
  /** Where acquiredMs comes from. */
  acquiredSource: string;
  /** acquired − lease expiry, and /primary 200 − lease expiry. */
  acquiredAfterExpiryMs: number;
  primaryAfterExpiryMs: number;
  /** From restarting the killed agent until the cluster is healthy again with it as a replica. */
  rejoinMs: number;
  /**
   * The old leader's last acknowledged write (a client writing to it directly) after the new primary
   * came up (its promotion by its own record, or its first 200 on /primary if earlier): > 0 is an interval
   * with two writable primaries; 0 when none.
   */
  twoWritersMs: number;
  /**
   * Writes either client saw acknowledged that the cluster's primary does not hold once it is healthy again (the old
   * leader's rewound away, typically); NaN when it could not be read. Absent in older results.
   */
  lostWrites?: number;
  /** The old leader's last acknowledged write, relative to the fault. */
  oldLastAckMs: number;
  loadBefore: string;
}

/** Scenario 3: `fault` on the leader (kill -9 of agent and postmaster by default) at a random moment of the HA loop. */
export async function failover(cluster: BenchCluster, fault: LeaderFault = 'agent+postmaster'): Promise<FailoverRun> {
  const { ttl, loopWait } = cluster.timing;
  const { leader } = await waitHealthy(cluster, 180_000);
  const others = cluster.nodes.filter((n) => n !== leader);
  const key = await readLeaderKey(cluster.etcdEndpoint, cluster.scope);
  if (!key || key.holder !== leader.name)
    throw new Error(`${cluster.label}: leader key ${JSON.stringify(key)} is not ${leader.name}`);
  const probe = new WriteProbe(cluster.nodes.map((n) => n.pgPort));
  probe.start(ttl * 1000 + 120_000);
  // A client that keeps writing to the old leader alone: any write it gets acknowledged after the new primary is up is split brain.
  const oldLeaderProbe = new WriteProbe([leader.pgPort]);
  oldLeaderProbe.start(ttl * 1000 + 120_000);
  let killed = false;
  let frozen = false;
  try {
    if ((await probe.waitForAckAfter(now(), 10_000)) === null)
      throw new Error(`${cluster.label}: the write client cannot write`);
    const jitterMs = Math.random() * loopWait * 1000;
    await sleep(jitterMs);
    const postmaster = leader.postmasterPid();
    const agent = leader.agentPid();
    if (!postmaster || !agent) throw new Error(`${cluster.label}: ${leader.name} has no agent or postmaster PID`);
    const watcher = new LeaseWatcher(cluster.etcdEndpoint, cluster.scope, key.lease, leader.name);
    const loadBefore = loadAverage();
    const killedAt = new Date().toISOString();
    const t0 = now();
    if (fault === 'frozen') {
      frozen = true;
      leader.signalAgent('SIGSTOP');
    } else {
      killed = true;
      leader.killAgentNow();
      if (fault === 'agent+postmaster') killPid(postmaster);
    }
    watcher.start(ttl * 1000 + 30_000);
    const winner = await pollUntil(
      async () => {
        const codes = await Promise.all(others.map((n) => httpCode(`${n.apiUrl}/primary`, 500)));
        const index = codes.findIndex((c) => c === 200);
        return index >= 0 ? { node: others[index], at: now() } : null;
      },
      ttl * 1000 + 30_000,
      25,
    );
    if (!winner) throw new Error(`${cluster.label}: no new leader within ${ttl + 30} s`);
    await watcher.stop();
    const back = await probe.waitForAckAfter(winner.at, 30_000);
    if (back !== null) await sleep(200);
    const writes = probe.gapAround(t0);
    await probe.stop();
    // Two more seconds of writes to the old leader: a primary that outlived its term would take them.
    await sleep(2000);
    await oldLeaderProbe.stop();
    const lease = watcher.analyse();
    const record = await newLeaderRecord(cluster, winner.node, t0);
    const newPrimaryUp = Number.isFinite(record.promoted) ? Math.min(record.promoted, winner.at) : winner.at;
    const oldLastAck = oldLeaderProbe.acks.at(-1) ?? -Infinity;

    let restarted: number;
    if (fault === 'frozen') {
      leader.signalAgent('SIGCONT');
      frozen = false;
      restarted = now();
    } else {
      await leader.agentExited();
      restarted = now();
      leader.startAgent();
      killed = false;
    }
    const healthy = await waitHealthy(cluster, 180_000, winner.node);
    const acknowledged = [...probe.ackedIds, ...oldLeaderProbe.ackedIds];
    const lostWrites = await missingIds(healthy.leader.pgPort, acknowledged).then(
      (ids) => ids.length,
      () => NaN,
    );

    const rel = (t: number) => t - t0;
    const run: FailoverRun = {
      kind: cluster.kind,
      ttl,
      loopWait,
      fault,
      killed: leader.name,
      newLeader: winner.node.name,
      jitterMs,
      newPrimaryMs: winner.at - t0,
      writes,
      lease: leaseRelative(lease, t0),
      acquiredMs: rel(record.acquired),
      promotedMs: rel(record.promoted),
      acquiredSource: record.source,
      acquiredAfterExpiryMs: record.acquired - lease.expiry,
      primaryAfterExpiryMs: winner.at - lease.expiry,
      rejoinMs: healthy.at - restarted,
      twoWritersMs: Math.max(0, oldLastAck - newPrimaryUp),
      lostWrites,
      oldLastAckMs: oldLastAck - t0,
      loadBefore,
    };
    log(
      `${cluster.kind} failover ttl ${ttl} (${fault}): ${run.killed} at ${killedAt} (jitter ${jitterMs.toFixed(0)} ms), ${run.newLeader} answers /primary after ${run.newPrimaryMs.toFixed(0)} ms, ` +
        `write gap ${writes.gapMs.toFixed(0)} ms; lease expired at +${run.lease.expiryMs.toFixed(0)}±${run.lease.expiryUncertaintyMs.toFixed(0)} ms, ` +
        `key gone +${run.lease.keyGoneHighMs.toFixed(0)} ms, lock taken +${run.acquiredMs.toFixed(0)} ms (${record.source}): ` +
        `${run.acquiredAfterExpiryMs.toFixed(0)} ms after expiry; old leader's last write +${run.oldLastAckMs.toFixed(0)} ms ` +
        `(two writers ${run.twoWritersMs.toFixed(0)} ms); ${lostWrites} acknowledged writes lost; rejoined ${run.rejoinMs.toFixed(0)} ms`,
    );
    return run;
  } finally {
    await probe.stop();
    await oldLeaderProbe.stop();
    if (frozen) leader.signalAgent('SIGCONT');
    // A failed run must not leave the cluster a node short for the next ones.
    if (killed && !leader.agentPid()) {
      await leader.agentExited();
      leader.startAgent();
    }
  }
}

function leaseRelative(lease: LeaseAnalysis, t0: number): FailoverRun['lease'] {
  return {
    expiryMs: lease.expiry - t0,
    // The bounds come from samples 20 ms apart, each taking a few ms: never claim better than ±10 ms.
    expiryUncertaintyMs: Math.max(Math.abs(lease.expiryHigh - lease.expiryLow) / 2, 10),
    keyGoneLowMs: lease.keyGoneLow - t0,
    keyGoneHighMs: lease.keyGoneHigh - t0,
    newHolderSeenMs: lease.newHolderSeen - t0,
  };
}

/**
 * When the new leader took the lock and promoted, by its own account: Stator's event log in etcd
 * (`leader.acquired`, `leader.promoted` cluster events, `at` from the node's clock); Patroni has no
 * event log, so its log line `promoted self to leader by acquiring session lock` (written right after
 * it took the lock and started the promotion) stands for both.
 */
async function newLeaderRecord(
  cluster: BenchCluster,
  winner: BenchNode,
  t0: number,
): Promise<{ acquired: number; promoted: number; source: string }> {
  if (cluster.kind === 'stator') {
    // The recorder flushes its queue to etcd asynchronously: give it a moment.
    const found = await pollUntil(
      async () => {
        const events = (await readStatorEvents(cluster.etcdEndpoint, cluster.scope)).filter(
          (e) => e.node === winner.name && Date.parse(e.at) >= t0,
        );
        const acquired = events.find((e) => e.type === 'leader.acquired');
        const promoted = events.find((e) => e.type === 'leader.promoted');
        return acquired && promoted ? { acquired: Date.parse(acquired.at), promoted: Date.parse(promoted.at) } : null;
      },
      5000,
      200,
    );
    return found
      ? { ...found, source: 'event log' }
      : { acquired: NaN, promoted: NaN, source: 'event log (not found)' };
  }
  const line = readFileSync(winner.logPath, 'utf8')
    .split('\n')
    .map((l) => ({ l, at: patroniLogTime(l) }))
    .find((x) => x.at >= t0 - 1 && /acquiring session lock/.test(x.l));
  return line
    ? { acquired: line.at, promoted: line.at, source: 'Patroni log' }
    : { acquired: NaN, promoted: NaN, source: 'Patroni log (not found)' };
}

/** `2026-11-21 05:33:20,007 INFO: ...` (local time) → epoch ms, NaN when the line has no such stamp. */
function patroniLogTime(line: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}),(\d{3}) /.exec(line);
  if (!m) return NaN;
  const [y, mo, d, h, mi, s, ms] = m.slice(1).map(Number);
  return new Date(y, mo - 1, d, h, mi, s, ms).getTime();
}
