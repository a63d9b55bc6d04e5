import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StatorBenchCluster } from './lib/cluster';
import { cleanupAll, track } from './lib/cleanup';
import { waitHealthy } from './lib/health';
import { runWrk } from './lib/wrk';
import { log, sleep } from './lib/util';

/**
 * `node dist/bench/profile.js [path|idle] [seconds]` (after `npm run build`): where a Stator agent's
 * CPU time goes under the health-check load (or, with `idle`, while nothing happens). Starts a 3-node Stator cluster whose agents run with
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
  // --cpu-prof is refused in NODE_OPTIONS, and the cluster launcher spawns `process.execPath`:
  // point that at a wrapper that adds the flag, for the agents' start only.
  const wrapper = join(baseDir, 'node-cpu-prof');
  writeFileSync(
    wrapper,
    `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} --cpu-prof --cpu-prof-dir=${JSON.stringify(profDir)} "$@"\n`,
    { mode: 0o755 },
  );
  const realNode = process.execPath;
  process.execPath = wrapper;
  let cluster: StatorBenchCluster;
  try {
    cluster = await StatorBenchCluster.start(
      join(baseDir, 'stator'),
      { ttl: 10, loopWait: 2, retryTimeout: 3 },
      'profile',
    );
  } finally {
    process.execPath = realNode;
  }
  track(cluster);
  try {
    const { leader } = await waitHealthy(cluster, 120_000);
    const leaderPid = leader.agentPid();
    if (path === 'idle') {
      log(`idle for ${seconds} s`);
      await sleep(seconds * 1000);
    } else {
      const result = await runWrk(`${leader.apiUrl}${path}`, seconds);
      log(`wrk ${path}: ${result.requestsPerSecond.toFixed(0)} req/s, p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms`);
    }
    await cleanupAll();
    const file = readdirSync(profDir).find((f) => f.includes(`.${leaderPid}.`) && f.endsWith('.cpuprofile'));
    if (!file)
      throw new Error(`no profile of the leader (pid ${leaderPid}) in ${profDir}: ${readdirSync(profDir).join(', ')}`);
    const profile = JSON.parse(readFileSync(join(profDir, file), 'utf8')) as CpuProfile;
    const kept = join(tmpdir(), `stator-leader-${path.replace(/\W/g, '') || 'root'}.cpuprofile`);
    writeFileSync(kept, JSON.stringify(profile));
    process.stdout.write(summarize(profile) + `\nprofile kept in ${kept}\n`);
    rmSync(baseDir, { recursive: true, force: true });
  } finally {
    await cleanupAll();
  }
}

/** Self time by function and by package (node_modules/<pkg>, node: internals, Stator's own dist/). */
export function summarize(profile: CpuProfile): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
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
  return [
    `profiled ${(total / 1e6).toFixed(1)} s of the leader agent's main thread`,
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

for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, () => void cleanupAll().then(() => process.exit(130)));

if (require.main === module) {
  main().catch(async (error) => {
    process.stderr.write(`${(error as Error).stack ?? error}\n`);
    await cleanupAll();
    process.exit(1);
  });
}
