import { BenchCluster } from '../lib/cluster';
import { httpCode } from '../lib/http';
import { waitHealthy } from '../lib/health';
import { cpuSeconds, memory } from '../lib/proc';
import { runWrk, WrkResult } from '../lib/wrk';
import { fmt, ratio, spreadText, table } from '../lib/report';
import { loadAverage, log, sleep, spread } from '../lib/util';

export interface SideBySideRun {
  /** The variant's label (`current`, `ab96148`...). */
  variant: string;
  pair: number;
  code: number;
  /** The 1, 5 and 15 minute load averages just before the run (the machine may be shared). */
  loadBefore: string;
  result: WrkResult;
  /** The leader agent's RSS right after the run, KiB. */
  leaderRssKiB: number | null;
  /**
   * The leader agent's CPU time (user + system, every thread) during the run per request answered, µs: what a request
   * costs, less sensitive than requests/s to the machine's other load (which takes the CPU away, not adds to it).
   */
  leaderCpuUsPerRequest: number | null;
}

/**
 * `wrk -t2 -c16` on the leader's `/primary` of each cluster in turn, `pairs` times, the order
 * alternating (A B, B A, A B...), so that a change in the machine's load falls on both sides.
 */
export async function healthSideBySide(
  clusters: { variant: string; cluster: BenchCluster }[],
  pairs: number,
  seconds: number,
): Promise<SideBySideRun[]> {
  const runs: SideBySideRun[] = [];
  for (let pair = 0; pair < pairs; pair++) {
    const order = pair % 2 === 0 ? clusters : [...clusters].reverse();
    for (const { variant, cluster } of order) {
      const { leader } = await waitHealthy(cluster, 60_000);
      const url = `${leader.apiUrl}/primary`;
      const code = await httpCode(url);
      await sleep(1000); // let the health poll's connections settle
      const loadBefore = loadAverage();
      const pid = leader.agentPid();
      const cpuBefore = pid ? cpuSeconds(pid) : null;
      const result = await runWrk(url, seconds);
      const cpuAfter = pid ? cpuSeconds(pid) : null;
      const leaderRssKiB = pid ? (memory(pid)?.rss ?? null) : null;
      const leaderCpuUsPerRequest =
        cpuBefore !== null && cpuAfter !== null && result.requests > 0
          ? ((cpuAfter - cpuBefore) * 1e6) / result.requests
          : null;
      log(
        `${variant} /primary (pair ${pair + 1}): ${result.requestsPerSecond.toFixed(0)} req/s, p50 ${result.p50Ms.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms, leader RSS ${((leaderRssKiB ?? NaN) / 1024).toFixed(1)} MiB, leader CPU ${(leaderCpuUsPerRequest ?? NaN).toFixed(1)} µs/request (HTTP ${code}; load ${loadBefore})`,
      );
      runs.push({
        variant,
        pair,
        code,
        loadBefore,
        result: { ...result, raw: '' },
        leaderRssKiB,
        leaderCpuUsPerRequest,
      });
    }
  }
  return runs;
}

/** One row per variant (requests/s, p99, leader RSS: min / median / max), then every run with its load average. */
export function renderSideBySide(runs: SideBySideRun[], seconds: number): string {
  const variants = [...new Set(runs.map((r) => r.variant))];
  const text = (values: number[], digits = 0) => spreadText(spread(values), digits);
  const first = variants[0];
  const rps = (variant: string) =>
    spread(runs.filter((r) => r.variant === variant).map((r) => r.result.requestsPerSecond)).median;
  const rows = variants.map((variant) => {
    const mine = runs.filter((r) => r.variant === variant);
    return [
      variant,
      text(mine.map((r) => r.result.requestsPerSecond)),
      variant === first ? '1' : ratio(rps(variant), rps(first)),
      text(
        mine.map((r) => r.result.p50Ms),
        2,
      ),
      text(
        mine.map((r) => r.result.p99Ms),
        2,
      ),
      text(
        mine.map((r) => r.leaderCpuUsPerRequest ?? NaN),
        1,
      ),
      text(
        mine.map((r) => (r.leaderRssKiB ?? NaN) / 1024),
        1,
      ),
    ];
  });
  const detail = runs.map(
    (r) =>
      `- pair ${r.pair + 1}, ${r.variant}: ${fmt(r.result.requestsPerSecond)} req/s, p99 ${fmt(r.result.p99Ms, 2)} ms, leader RSS ${fmt((r.leaderRssKiB ?? NaN) / 1024, 1)} MiB, ` +
      `leader CPU ${fmt(r.leaderCpuUsPerRequest ?? NaN, 1)} µs/request, ` +
      `HTTP ${r.code}, non-2xx ${r.result.non2xx}, socket errors: ${r.result.socketErrors}; load before ${r.loadBefore}`,
  );
  return [
    `\`wrk -t2 -c16 -d${seconds}s\` on the leader's \`/primary\`, the variants in turn, the order alternating from pair to pair. min / **median** / max over the pairs; ratio of the medians to \`${first}\`.`,
    '',
    table(
      [
        'agent',
        'requests/s',
        'ratio',
        'p50 ms',
        'p99 ms',
        'leader CPU µs per request',
        'leader RSS after its run, MiB',
      ],
      rows,
    ),
    '',
    ...detail,
  ].join('\n');
}
