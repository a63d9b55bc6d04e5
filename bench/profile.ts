import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StatorBenchCluster } from './lib/cluster';
import { cleanupAll, track } from './lib/cleanup';
import { waitHealthy } from './lib/health';
import { httpPost } from './lib/http';
import { runWrk } from './lib/wrk';
import { log, sleep } from './lib/util';
import { currentVariant, parseVariants, writeLauncher } from './lib/agent-variant';
import { findRepoRoot } from './lib/preflight';
import { cpuSeconds } from './lib/proc';

const REPO_ROOT = findRepoRoot(__dirname);

/**
 * `node dist/bench/profile.js [path|idle|switchover] [seconds|count]` (after `npm run build`): where a Stator agent's
 * CPU time goes under the health-check load (or, with `idle`, while nothing happens; with `switchover`, over
 * `count` switchovers one after the other, all three agents' samples of that window only). Starts a 3-node Stator cluster whose agents run with
 * `--cpu-prof`, puts `wrk -t2 -c16` on the leader's `path` (default /primary), stops the cluster
 * (the profiles are written at exit) and prints the leader's self time by function and by package.
 * The raw .cpuprofile (open it in Chrome DevTools) is kept in the OS temp directory.
 */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

async function main(): Promise<void> {
  const path = process.argv[2] ?? '/primary';
  const seconds = Number(process.argv[3] ?? 10);
  const baseDir = mkdtempSync(join(tmpdir(), 'stator-profile-'));
  chmodSync(baseDir, 0o755);
  const profDir = join(baseDir, 'profiles');
  mkdirSync(profDir);
  // The agents start through a launcher (bench/lib/agent-variant.ts) that adds --cpu-prof to the variant's flags:
  // this checkout as launched, or BENCH_PROFILE_AGENT (one BENCH_HEALTH_VARIANTS entry: another commit, flags, env).
  const chosen = process.env.BENCH_PROFILE_AGENT
    ? parseVariants(process.env.BENCH_PROFILE_AGENT, REPO_ROOT, join(tmpdir(), 'stator-bench-builds'))[0]
    : currentVariant(REPO_ROOT);
  // BENCH_PROFILE_CPU_ONLY=1: no profiler (it costs CPU of its own), only the agents' CPU time from /proc.
  const cpuOnly = process.env.BENCH_PROFILE_CPU_ONLY === '1';
  const profilerFlags = cpuOnly ? [] : ['--cpu-prof', `--cpu-prof-dir=${profDir}`];
  const variant = { ...chosen, nodeFlags: [...chosen.nodeFlags, ...profilerFlags] };
  const agentProgram = writeLauncher(variant, baseDir);
  log(`profiling ${variant.label}: ${variant.checkout}, node ${variant.nodeFlags.join(' ')}`);
  const cluster = await StatorBenchCluster.start(
    join(baseDir, 'stator'),
    { ttl: 10, loopWait: 2, retryTimeout: 3 },
    'profile',
    {
      label: variant.label,
      agentProgram,
    },
  );
  track(cluster);
  try {
    const { leader } = await waitHealthy(cluster, 120_000);
    const leaderPid = leader.agentPid();
    let requests = 0;
    let switchovers: { fromUs: number; toUs: number; count: number } | null = null;
    if (path === 'switchover') {
      switchovers = await switchOverAndOver(cluster, seconds);
    } else if (path === 'idle') {
      log(`idle for ${seconds} s`);
      await sleep(seconds * 1000);
    } else {
      const result = await runWrk(`${leader.apiUrl}${path}`, seconds);
      requests = result.requests;
      log(`wrk ${path}: ${result.requestsPerSecond.toFixed(0)} req/s, p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms`);
    }
    const agentPids = cluster.nodes.map((node) => node.agentPid());
    await cleanupAll();
    if (switchovers) {
      if (cpuOnly) return;
      const profiles = readdirSync(profDir)
        .filter((f) => agentPids.some((pid) => f.includes(`.${pid}.`)) && f.endsWith('.cpuprofile'))
        .map((f) => JSON.parse(readFileSync(join(profDir, f), 'utf8')) as CpuProfile);
      writeFileSync(join(profDir, 'window.json'), JSON.stringify(switchovers));
      process.stdout.write(summarizeWindow(profiles, switchovers) + `\nprofiles and window.json kept in ${profDir}\n`);
      return;
    }
    const file = readdirSync(profDir).find((f) => f.includes(`.${leaderPid}.`) && f.endsWith('.cpuprofile'));
    if (!file)
      throw new Error(`no profile of the leader (pid ${leaderPid}) in ${profDir}: ${readdirSync(profDir).join(', ')}`);
    const profile = JSON.parse(readFileSync(join(profDir, file), 'utf8')) as CpuProfile;
    const kept = join(tmpdir(), `stator-leader-${path.replace(/\W/g, '') || 'root'}.cpuprofile`);
    writeFileSync(kept, JSON.stringify(profile));
    process.stdout.write(summarize(profile, requests, path === 'idle' ? 0 : seconds) + `\nprofile kept in ${kept}\n`);
    rmSync(baseDir, { recursive: true, force: true });
  } finally {
    await cleanupAll();
  }
}

/** `count` switchovers, each to the first replica and waited for; the window in the clock V8's profiles use. */
async function switchOverAndOver(
  cluster: StatorBenchCluster,
  count: number,
): Promise<{ fromUs: number; toUs: number; count: number }> {
  // V8 stamps samples with CLOCK_MONOTONIC in µs, the clock process.hrtime reads.
  const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);
  await sleep(5000);
  const fromUs = monotonicUs();
  const agentCpu = () => cluster.nodes.map((node) => cpuSeconds(node.agentPid() ?? 0) ?? NaN);
  const cpuBefore = agentCpu();
  for (let i = 0; i < count; i++) {
    const { leader } = await waitHealthy(cluster, 60_000);
    const candidate = cluster.nodes.find((node) => node !== leader)!;
    const started = Date.now();
    const answer = await httpPost(
      `${leader.apiUrl}/switchover`,
      { leader: leader.name, candidate: candidate.name },
      60_000,
    );
    await waitHealthy(cluster, 60_000, candidate);
    log(
      `switchover ${i + 1}: ${leader.name} -> ${candidate.name}, ${answer.status}, healthy after ${Date.now() - started} ms`,
    );
  }
  await sleep(5000);
  const cpuUsed = agentCpu().map((seconds, i) => seconds - cpuBefore[i]);
  log(
    `agents' CPU over the window (/proc): ${cpuUsed.map((s) => s.toFixed(2)).join(' + ')} = ` +
      `${cpuUsed.reduce((a, b) => a + b, 0).toFixed(2)} s, ${(cpuUsed.reduce((a, b) => a + b, 0) / count).toFixed(2)} s per switchover`,
  );
  return { fromUs, toUs: monotonicUs(), count };
}

/** Self time by function and by package of several profiles' samples inside [fromUs, toUs). */
function summarizeWindow(profiles: CpuProfile[], window: { fromUs: number; toUs: number; count: number }): string {
  const merged: CpuProfile = { nodes: [], samples: [], timeDeltas: [], startTime: 0, endTime: 0 };
  let offset = 0;
  for (const profile of profiles) {
    let at = profile.startTime;
    profile.samples.forEach((id, i) => {
      at += profile.timeDeltas[i] ?? 0;
      if (at < window.fromUs || at >= window.toUs) return;
      merged.samples.push(id + offset);
      merged.timeDeltas.push(profile.timeDeltas[i] ?? 0);
    });
    for (const node of profile.nodes) merged.nodes.push({ ...node, id: node.id + offset });
    offset += Math.max(...profile.nodes.map((node) => node.id)) + 1;
  }
  const seconds = (window.toUs - window.fromUs) / 1e6;
  return [
    `${profiles.length} agents over ${seconds.toFixed(1)} s holding ${window.count} switchovers (5 s quiet either side)`,
    summarize(merged),
  ].join('\n');
}

/** Self time by function and by package (node_modules/<pkg>, node: internals, Stator's own dist/). */
export function summarize(profile: CpuProfile, requests = 0, windowSeconds = 0): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const idleIds = new Set(profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
  const [from, to] =
    windowSeconds > 0 ? busiestWindow(profile, idleIds, windowSeconds * 1e6) : [0, profile.samples.length];
  const selfUs = new Map<number, number>();
  for (let i = from; i < to; i++) {
    const id = profile.samples[i];
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const fn = new Map<string, number>();
  const pkg = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)!.callFrame;
    const where = frame.url
      ? `${frame.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/dist\//, 'dist/')}:${frame.lineNumber + 1}`
      : '';
    const key = `${frame.functionName || '(anonymous)'} ${where}`.trim();
    fn.set(key, (fn.get(key) ?? 0) + us);
    const p = !frame.url
      ? frame.functionName.startsWith('(')
        ? frame.functionName
        : '(native)'
      : frame.url.startsWith('node:')
        ? 'node: internals'
        : (/node_modules\/((@[^/]+\/)?[^/]+)/.exec(frame.url)?.[1] ??
          (frame.url.includes('/dist/') ? 'stator (dist/)' : frame.url));
    pkg.set(p, (pkg.get(p) ?? 0) + us);
  }
  const rows = (m: Map<string, number>, n: number) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, us]) => `| ${k} | ${(us / 1000).toFixed(0)} | ${((100 * us) / total).toFixed(1)} % |`)
      .join('\n');
  const busy = [...selfUs.entries()].filter(([id]) => !idleIds.has(id)).reduce((a, [, us]) => a + us, 0);
  return [
    windowSeconds > 0
      ? `the busiest ${windowSeconds} s of the leader agent's main thread (the load's window): ${(busy / 1e6).toFixed(2)} s busy` +
        (requests > 0
          ? `, ${requests} requests: ${(busy / requests).toFixed(1)} µs of the main thread per request`
          : '')
      : `profiled ${(total / 1e6).toFixed(1)} s of main thread, ${(busy / 1e6).toFixed(2)} s busy`,
    '',
    '| package | self ms | share |',
    '| --- | --- | --- |',
    rows(pkg, 15),
    '',
    '| function | self ms | share |',
    '| --- | --- | --- |',
    rows(fn, 25),
  ].join('\n');
}

/**
 * The samples [from, to) of the `windowUs`-long stretch with the least idle time: the load's window,
 * without the agent's start and stop, which the profile also holds.
 */
function busiestWindow(profile: CpuProfile, idleIds: Set<number>, windowUs: number): [number, number] {
  const at: number[] = [];
  let t = 0;
  for (const delta of profile.timeDeltas) at.push((t += delta));
  let best: [number, number] = [0, 0];
  let bestBusy = -1;
  let busy = 0;
  let from = 0;
  for (let to = 0; to < at.length; to++) {
    if (!idleIds.has(profile.samples[to])) busy += profile.timeDeltas[to];
    while (at[to] - at[from] > windowUs) {
      if (!idleIds.has(profile.samples[from])) busy -= profile.timeDeltas[from];
      from++;
    }
    if (busy > bestBusy) {
      bestBusy = busy;
      best = [from, to + 1];
    }
  }
  return best;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, () => void cleanupAll().then(() => process.exit(130)));

if (require.main === module) {
  main().catch(async (error) => {
    process.stderr.write(`${(error as Error).stack ?? error}\n`);
    await cleanupAll();
    process.exit(1);
  });
}
