import { join } from 'node:path';
import { LocalCluster, LocalClusterOptions } from '../local-cluster';
import { splitBrainIntervals, lostWrites, SplitBrainInterval } from './checker';
import type { Fault } from './fault';
import { FAULTS } from './faults';
import { NetnsLab } from '../netns-lab';
import { mountWalVolumes, walVolumeOf } from './wal-volumes';
import { compareWithReplay, MemoryPoller, RoundMemory } from './memory-replay';
import { RoundWrites, writesByRound } from './per-round';
import { EtcdEventStore } from '../../../src/events/etcd-event-store';
import { RecordedEvent } from '../../../src/events/event';
import { wallClockEnvironment } from './wall-clock';
import { Acknowledgement, ReadWriteClient } from './writer';
import { Client } from 'pg';

export interface ChaosOptions {
  seed: number;
  rounds: number;
  baseDir: string;
  /** Only these faults (by name); default all but the opt-in ones. */
  faults?: string[];
  ttl?: number;
  /** Replication mode: `/config`'s synchronous_mode off (default), on, or quorum. */
  mode?: ReplicationMode;
  /** Where the cluster runs (chooseBed): loopback unless asked, or unless a network fault is named. */
  bed?: ChaosBed;
  log?: (line: string) => void;
}

export type ReplicationMode = 'async' | 'sync' | 'quorum';

/**
 * `loopback`: every process on 127.0.0.1, one etcd. `netns`: each node and each of 3 etcd members in a network
 * namespace of its own (netns-lab.ts, root only), the clients reaching the nodes over their client links; the
 * network faults need it.
 */
export type ChaosBed = 'loopback' | 'netns';

/** The bed asked for; without one, `netns` when a named fault needs it, else `loopback`. */
export function chooseBed(asked: ChaosBed | undefined, names?: string[]): ChaosBed {
  const needsNetns = FAULTS.some((fault) => fault.needsNetns && names?.includes(fault.name));
  const bed = asked ?? (needsNetns ? 'netns' : 'loopback');
  if (bed === 'loopback' && needsNetns) throw new Error('network faults run only in the netns bed (--bed netns)');
  if (bed === 'netns' && !NetnsLab.available()) throw new Error('the netns bed needs root and `ip netns` (iproute2)');
  return bed;
}

/** `bootstrap.dcs` keys of each mode. */
const MODE_SETTINGS: Record<ReplicationMode, Record<string, unknown>> = {
  async: {},
  sync: { synchronous_mode: true },
  quorum: { synchronous_mode: 'quorum' },
};

export interface RoundResult {
  round: number;
  fault: string;
  leaderBefore: string;
  leaderAfter: string | null;
  /** From the fault's start to one leader with every other node streaming; null when that did not happen within HEAL_WITHIN_MS. */
  recoveryMs: number | null;
  /** The longest time without an acknowledged write from the fault's start to the healthy cluster: what the clients felt. */
  writeGapMs: number | null;
  /** When the fault started, ms since the run began. */
  fromMs: number;
  /** The checker's findings in this round's window (filled in at the end of the run). */
  writes?: RoundWrites;
  /** Each node's memory as served during the round against the replay of its log (filled in at the end of the run). */
  memory?: RoundMemory;
}

export interface ChaosReport {
  seed: number;
  rounds: RoundResult[];
  acknowledged: number;
  lost: Acknowledgement[];
  splitBrain: SplitBrainInterval[];
  /** Replicas that did not hold every row of the final leader. */
  diverging: string[];
}

const HEAL_WITHIN_MS = 90_000;
/** The run's retry_timeout (s); ttl 10 and loop_wait 2 beside it keep loop_wait + 2 × retry_timeout <= ttl. */
const RETRY_TIMEOUT = 4;

/** mulberry32: a small seeded PRNG, so a seed names one schedule. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The faults named, in the table's order; without names, every fault but the opt-in ones (and, unless root, those
 * that mount; outside the netns bed, the network faults).
 */
export function faultsNamed(names?: string[], bed: ChaosBed = 'loopback'): Fault[] {
  if (names) return FAULTS.filter((fault) => names.includes(fault.name));
  const root = process.getuid?.() === 0;
  return FAULTS.filter(
    (fault) => !fault.optIn && (root || !fault.needsWalVolumes) && (bed === 'netns' || !fault.needsNetns),
  );
}

/**
 * `--faults`' comma-separated list as names: a name with a comma in it (`power cut of the whole cluster, etcd
 * included`) stays whole; what is no fault's name comes out as given, for the caller to refuse.
 */
export function splitFaultList(list: string): string[] {
  const names: string[] = [];
  let rest = list.trim();
  while (rest) {
    const known = FAULTS.map((fault) => fault.name)
      .filter((name) => rest === name || rest.startsWith(`${name},`))
      .sort((a, b) => b.length - a.length)[0];
    const name = known ?? rest.split(',')[0];
    names.push(name.trim());
    rest = rest.slice(name.length + 1).trim();
  }
  return names;
}

/** Every fault once in a seeded order, then seeded picks: `rounds` faults in all. */
export function schedule(seed: number, rounds: number, faults: Fault[]): Fault[] {
  const next = random(seed);
  const shuffled = [...faults];
  for (let i = shuffled.length - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    [shuffled[i], shuffled[j]] = [shuffled[j], shuffled[i]];
  }
  const plan = shuffled.slice(0, rounds);
  while (plan.length < rounds) plan.push(faults[Math.floor(next() * faults.length)]);
  return plan;
}

/**
 * The longest stretch without an acknowledged write from `fromMs` on (run time), once writes flow
 * again: waits up to 10 s for the first acknowledgement after the cluster healed.
 */
async function longestWriteGap(acks: Acknowledgement[], fromMs: number, now: () => number): Promise<number | null> {
  const healedAt = now();
  while (!acks.some((ack) => ack.at > healedAt) && now() - healedAt < 10_000)
    await new Promise((resolve) => setTimeout(resolve, 50));
  const times = acks
    .map((ack) => ack.at)
    .filter((at) => at >= fromMs)
    .sort((a, b) => a - b);
  if (!times.some((at) => at > healedAt)) return null;
  let longest = times[0] - fromMs;
  for (let i = 1; i < times.length && times[i - 1] <= healedAt; i++)
    longest = Math.max(longest, times[i] - times[i - 1]);
  return Math.round(longest);
}

async function count(connectionString: string): Promise<Set<number>> {
  const client = new Client({ connectionString, connectionTimeoutMillis: 2000, statement_timeout: 10_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const rows = (await client.query('SELECT n FROM chaos')).rows as { n: string }[];
    return new Set(rows.map((row) => Number(row.n)));
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * A seeded fault schedule over a 3-node cluster while two read-write clients write every 50 ms.
 * Each round waits for a healthy cluster, injects one fault and times the way back to one leader
 * with every other node streaming. At the end: acknowledged writes missing on the final leader,
 * intervals where two nodes acknowledged writes, and replicas missing rows of the leader.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const ttl = options.ttl ?? 10;
  const log = options.log ?? (() => undefined);
  const bed = chooseBed(options.bed, options.faults);
  const plan = schedule(options.seed, options.rounds, faultsNamed(options.faults, bed));
  // libfaketime only when a fault of the schedule moves a clock: it costs every clock call a file read.
  const agentEnvFor = plan.some((fault) => fault.needsFakeTime)
    ? (index: number) => wallClockEnvironment(join(options.baseDir, `node${index}`))
    : undefined;
  // Each node's WAL on a small volume of its own only when the schedule fills one: mounting needs root.
  const walVolumes = plan.some((fault) => fault.needsWalVolumes);
  const unmountWalVolumes = walVolumes ? mountWalVolumes(options.baseDir, 3) : () => undefined;
  const lab = bed === 'netns' ? NetnsLab.create(join(options.baseDir, 'netns')) : null;
  const cleanUp = () => {
    lab?.destroy();
    unmountWalVolumes();
  };
  const cluster = await startCluster(lab, {
    nodes: 3,
    baseDir: options.baseDir,
    ttl,
    loopWait: 2,
    retryTimeout: RETRY_TIMEOUT,
    dcs: MODE_SETTINGS[options.mode ?? 'async'],
    agentEnvFor,
    ...(walVolumes && {
      walDir: (index: number) => join(walVolumeOf(options.baseDir, index), 'pg_wal'),
    }),
  }).catch((error: unknown) => {
    cleanUp();
    throw error;
  });
  const acknowledged: Acknowledgement[] = [];
  const rounds: RoundResult[] = [];
  try {
    const first = await cluster.waitForHealthy(60_000);
    const setup = new Client({ connectionString: first.connectionString() });
    await setup.connect();
    await setup.query('CREATE TABLE chaos (n bigint PRIMARY KEY, node text NOT NULL)');
    await setup.end();

    let key = 0;
    const keys = { next: () => ++key };
    const started = performance.now();
    const writers = [0, 1].map(() => new ReadWriteClient(cluster, keys, acknowledged, started));
    writers.forEach((writer) => writer.start());
    const poller = new MemoryPoller(cluster.nodes);

    for (const [index, fault] of plan.entries()) {
      const leader = await cluster.waitForHealthy(HEAL_WITHIN_MS).catch(() => null);
      if (!leader) {
        rounds.push({
          round: index + 1,
          fault: fault.name,
          leaderBefore: '-',
          leaderAfter: null,
          recoveryMs: null,
          writeGapMs: null,
          fromMs: performance.now() - started,
        });
        log(`round ${index + 1}: the cluster was not healthy before "${fault.name}"; stopping`);
        break;
      }
      // From the healthy cluster before the fault on: a round that heals at once is sampled before and after.
      poller.start(index + 1, fault.needsFakeTime ? new Set([leader.name]) : new Set());
      await new Promise((resolve) => setTimeout(resolve, 2000)); // writes flow before the fault
      const at = performance.now();
      log(`round ${index + 1}: ${fault.name} (leader ${leader.name})`);
      await fault.inject(cluster, leader, ttl, { lab, retryTimeoutSeconds: RETRY_TIMEOUT });
      const after = await cluster.waitForHealthy(HEAL_WITHIN_MS).catch(() => null);
      const recoveryMs = after ? Math.round(performance.now() - at) : null;
      const writeGapMs = after
        ? await longestWriteGap(acknowledged, at - started, () => performance.now() - started)
        : null;
      await poller.stop();
      rounds.push({
        round: index + 1,
        fault: fault.name,
        leaderBefore: leader.name,
        leaderAfter: after?.name ?? null,
        recoveryMs,
        writeGapMs,
        fromMs: at - started,
      });
      log(
        `round ${index + 1}: ${after ? `healthy after ${recoveryMs} ms, leader ${after.name}, longest write gap ${writeGapMs} ms` : 'NOT healthy'}`,
      );
    }

    await Promise.all(writers.map((writer) => writer.stop()));
    const leader = await cluster.waitForHealthy(HEAL_WITHIN_MS);
    const stored = await count(leader.connectionString());
    const diverging: string[] = [];
    for (const node of cluster.nodes.filter((n) => n !== leader)) {
      const deadline = performance.now() + 20_000;
      let held = await count(node.connectionString()).catch(() => new Set<number>());
      while ([...stored].some((n) => !held.has(n)) && performance.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        held = await count(node.connectionString()).catch(() => new Set<number>());
      }
      if ([...stored].some((n) => !held.has(n))) diverging.push(node.name);
    }
    const lost = lostWrites(acknowledged, stored);
    const splitBrain = splitBrainIntervals(acknowledged);
    const perRound = writesByRound(
      rounds.map((round) => round.fromMs),
      acknowledged,
      lost,
      splitBrain,
    );
    const memory = await replayedMemory(cluster, poller, rounds.length);
    return {
      seed: options.seed,
      rounds: rounds.map((round, index) => ({ ...round, writes: perRound[index], memory: memory[index] })),
      acknowledged: acknowledged.length,
      lost,
      splitBrain,
      diverging,
    };
  } finally {
    await cluster.stop();
    cleanUp();
  }
}

/** LocalCluster.start, in the netns lab when there is one (its 3-member etcd started first). */
async function startCluster(lab: NetnsLab | null, options: LocalClusterOptions): Promise<LocalCluster> {
  if (!lab) return LocalCluster.start(options);
  const etcd = await lab.startEtcd();
  return LocalCluster.start({ ...options, network: lab.network(etcd, options.nodes) });
}

/**
 * The memory samples of every round against the replay of the cluster's event log. A recorder may still be
 * flushing its last events: the log is read again for up to 15 s while some sample is not rebuilt.
 */
async function replayedMemory(cluster: LocalCluster, poller: MemoryPoller, rounds: number): Promise<RoundMemory[]> {
  const store = new EtcdEventStore({ hosts: [cluster.etcd.endpoint], scope: cluster.scope, requestTimeoutMs: 5000 });
  const deadline = performance.now() + 15_000;
  try {
    for (;;) {
      const events: RecordedEvent[] = await store.read();
      const compared = compareWithReplay(events, poller.taken(), rounds);
      if (compared.every((round) => round.mismatches.length === 0) || performance.now() > deadline) return compared;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  } finally {
    await store.close();
  }
}

/** The report as Markdown: one table row per round, then the totals. */
export function formatReport(reports: ChaosReport[]): string {
  const lines = [
    '| seed | round | fault | leader before | leader after | healthy after (s) | longest write gap (s) | acknowledged | lost | two writers (s) | memory instants replayed | not rebuilt |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  const mismatches: string[] = [];
  for (const report of reports) {
    for (const round of report.rounds) {
      const recovery = round.recoveryMs === null ? 'not recovered' : (round.recoveryMs / 1000).toFixed(1);
      const gap = round.writeGapMs === null ? 'writes did not resume' : (round.writeGapMs / 1000).toFixed(1);
      const writes = round.writes;
      // Each interval in which two nodes acknowledged writes, as its length.
      const twoWriters = writes?.twoWriters.length
        ? writes.twoWriters.map((interval) => ((interval.toMs - interval.fromMs) / 1000).toFixed(1)).join(', ')
        : '-';
      lines.push(
        `| ${report.seed} | ${round.round} | ${round.fault} | ${round.leaderBefore} | ${round.leaderAfter ?? '-'} | ${recovery} | ${gap} | ` +
          `${writes?.acknowledged ?? '-'} | ${writes?.lost ?? '-'} | ${twoWriters} | ${instantsOf(round.memory)} | ${round.memory?.mismatches.length ?? '-'} |`,
      );
      for (const mismatch of round.memory?.mismatches ?? [])
        mismatches.push(
          `- seed ${report.seed}, round ${round.round}: ${mismatch.node} at ${mismatch.at}: ${mismatch.detail}`,
        );
    }
  }
  const recoveries = reports
    .flatMap((r) => r.rounds.map((round) => round.recoveryMs))
    .filter((ms): ms is number => ms !== null);
  const gaps = reports
    .flatMap((r) => r.rounds.map((round) => round.writeGapMs))
    .filter((ms): ms is number => ms !== null)
    .sort((a, b) => a - b);
  const median = gaps.length ? gaps[Math.floor(gaps.length / 2)] / 1000 : NaN;
  const max = gaps.length ? gaps[gaps.length - 1] / 1000 : NaN;
  const total = reports.reduce((sum, r) => sum + r.rounds.length, 0);
  lines.push(
    '',
    '| seeds | rounds | recovered | acknowledged writes | lost | split-brain intervals | diverging replicas | median write gap | max write gap |',
    '|---|---|---|---|---|---|---|---|---|',
    `| ${reports.map((r) => r.seed).join(', ')} | ${total} | ${recoveries.length} | ${reports.reduce((s, r) => s + r.acknowledged, 0)} | ` +
      `${reports.reduce((s, r) => s + r.lost.length, 0)} | ${reports.reduce((s, r) => s + r.splitBrain.length, 0)} | ` +
      `${reports.reduce((s, r) => s + r.diverging.length, 0)} | ${median.toFixed(1)} s | ${max.toFixed(1)} s |`,
  );
  if (mismatches.length > 0) lines.push('', 'Memory served but not rebuilt by the replay of the log:', ...mismatches);
  return lines.join('\n');
}

/** `node1 5, node2 4`: the instants compared per node. */
function instantsOf(memory: RoundMemory | undefined): string {
  if (!memory) return '-';
  const nodes = Object.keys(memory.instants).sort();
  return nodes.length ? nodes.map((node) => `${node} ${memory.instants[node]}`).join(', ') : '0';
}

/** Whether a round's checks failed: not recovered, or the log's replay did not rebuild what a node served. */
export function roundFailed(round: RoundResult): boolean {
  return round.recoveryMs === null || (round.memory?.mismatches.length ?? 0) > 0;
}
