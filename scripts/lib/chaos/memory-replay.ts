import { replayedMachineAt } from '../../../src/audit/transition-replay';
import { RecordedEvent } from '../../../src/events/event';
import { HaMemory, replayableMemory } from '../../../src/ha/ha-memory.machine';
import { LocalNode } from '../local-cluster';

/** What a node served of its HA cycle's memory (GET /stator/memory), and an instant at which it held it. */
export interface MemorySample {
  node: string;
  /** The round the sample was taken in (1-based). */
  round: number;
  /** An ISO time between two equal reads: the memory did not change around it. */
  at: string;
  memory: unknown;
}

/** A sample the log's replay does not rebuild. */
export interface MemoryMismatch {
  node: string;
  at: string;
  /** The first key that differs, or why no memory could be rebuilt at all. */
  detail: string;
}

/** What the replay found in one round: instants compared per node, the mismatches. */
export interface RoundMemory {
  instants: Record<string, number>;
  mismatches: MemoryMismatch[];
}

const POLL_EVERY_MS = 2000;
const READ_TIMEOUT_MS = 1000;
const MIN_PASSES = 4;

/**
 * Reads every node's `GET /stator/memory` every 2 s while a round runs (at least four times), each read twice: a sample is kept
 * only when both reads are equal, at the instant between them. A node that does not answer (killed,
 * stopped) gives no sample. Nodes whose wall clock a fault moves are left out: their events carry the
 * moved clock's times, which the poller's instants cannot be compared with.
 */
export class MemoryPoller {
  private readonly samples: MemorySample[] = [];
  private running: Promise<void> | null = null;
  private stopRequested = false;
  /** Rounds of reads done since start(): stop() waits for MIN_PASSES, so that a quick round is sampled too. */
  private passes = 0;

  constructor(private readonly nodes: LocalNode[]) {}

  start(round: number, skip: ReadonlySet<string> = new Set()): void {
    this.stopRequested = false;
    this.passes = 0;
    const polled = this.nodes.filter((node) => !skip.has(node.name));
    this.running = (async () => {
      while (!this.stopRequested || this.passes < MIN_PASSES) {
        const began = performance.now();
        const taken = await Promise.all(polled.map((node) => sampleOf(node, round)));
        this.samples.push(...taken.filter((sample): sample is MemorySample => sample !== null));
        this.passes++;
        const rest = POLL_EVERY_MS - (performance.now() - began);
        if (rest > 0 && (!this.stopRequested || this.passes < MIN_PASSES))
          await new Promise((resolve) => setTimeout(resolve, rest));
      }
    })();
  }

  /** Ends the reads, once at least MIN_PASSES rounds of them were made since start(). */
  async stop(): Promise<void> {
    this.stopRequested = true;
    await this.running;
    this.running = null;
  }

  taken(): MemorySample[] {
    return [...this.samples];
  }
}

async function sampleOf(node: LocalNode, round: number): Promise<MemorySample | null> {
  const read = async () => {
    const response = await fetch(`${node.apiUrl}/stator/memory`, { signal: AbortSignal.timeout(READ_TIMEOUT_MS) });
    return response.ok ? ((await response.json()) as unknown) : null;
  };
  try {
    const first = await read();
    const at = new Date().toISOString();
    const second = await read();
    return first !== null && canonical(first) === canonical(second)
      ? { node: node.name, round, at, memory: second }
      : null;
  } catch {
    return null;
  }
}

/**
 * Each sample against the node's memory machine replayed from the log up to the sample's instant (as
 * `stator audit replay` rebuilds it), per round: instants compared per node and the mismatches.
 */
export function compareWithReplay(events: RecordedEvent[], samples: MemorySample[], rounds: number): RoundMemory[] {
  const result: RoundMemory[] = Array.from({ length: rounds }, () => ({ instants: {}, mismatches: [] }));
  for (const sample of samples) {
    const round = result[sample.round - 1];
    if (!round) continue;
    round.instants[sample.node] = (round.instants[sample.node] ?? 0) + 1;
    const replayed = replayedMachineAt(events, `node/${sample.node}/memory`, sample.at);
    const detail = replayed
      ? firstDifference(replayableMemory(replayed.context as HaMemory), sample.memory)
      : 'no memory transition in the log by then';
    if (detail !== null) round.mismatches.push({ node: sample.node, at: sample.at, detail });
  }
  return result;
}

/** The first top-level key whose value differs (`key: replayed … served …`), null when equal. */
export function firstDifference(replayed: object, served: unknown): string | null {
  const servedRecord = (served ?? {}) as Record<string, unknown>;
  const replayedRecord = replayed as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(replayedRecord), ...Object.keys(servedRecord)])].sort();
  for (const key of keys) {
    const [a, b] = [canonical(replayedRecord[key]), canonical(servedRecord[key])];
    if (a !== b) return `${key}: replayed ${a ?? 'nothing'}, served ${b ?? 'nothing'}`;
  }
  return null;
}

/** JSON with every object's keys in order: two equal values give one text whatever order their keys were set in. */
function canonical(value: unknown): string | undefined {
  return JSON.stringify(value, (_key, inner: unknown) =>
    inner !== null && typeof inner === 'object' && !Array.isArray(inner)
      ? Object.fromEntries(Object.entries(inner as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)))
      : inner,
  );
}
