import { now, sleep } from './util';

/** How long etcd took to apply one small write during a window: the fleet's share of a crowded etcd, as a client sees it. */
export interface EtcdWriteLatency {
  /** Puts answered, and their times, ms. */
  n: number;
  median: number;
  p90: number;
  max: number;
  /** Puts that got no answer within their 5 s deadline. */
  failed: number;
}

const PROBE_KEY = Buffer.from('/bench/etcd-write-probe').toString('base64');

/**
 * Puts one small key every `intervalMs`, one at a time (the next as soon as a slow one answers), through etcd's
 * JSON gateway: each is a raft write, so its time is what every agent's lock and key writes wait meanwhile.
 */
export class EtcdWriteProbe {
  private readonly times: number[] = [];
  private failed = 0;
  private stopped = false;
  private loop: Promise<void> | null = null;

  constructor(
    private readonly endpoint: string,
    private readonly intervalMs = 100,
  ) {}

  start(): void {
    this.loop = this.run();
  }

  async stop(): Promise<EtcdWriteLatency> {
    this.stopped = true;
    await this.loop;
    const sorted = [...this.times].sort((a, b) => a - b);
    const at = (q: number) =>
      sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : NaN;
    return {
      n: sorted.length,
      median: at(0.5),
      p90: at(0.9),
      max: sorted[sorted.length - 1] ?? NaN,
      failed: this.failed,
    };
  }

  private async run(): Promise<void> {
    for (let i = 0; !this.stopped; i++) {
      const started = now();
      try {
        const response = await fetch(`http://${this.endpoint}/v3/kv/put`, {
          method: 'POST',
          body: JSON.stringify({ key: PROBE_KEY, value: Buffer.from(String(i)).toString('base64') }),
          signal: AbortSignal.timeout(5000),
        });
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        await response.arrayBuffer();
        this.times.push(now() - started);
      } catch {
        this.failed++;
      }
      await sleep(Math.max(0, started + this.intervalMs - now()));
    }
  }
}
