import { ChildProcess, spawn } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../scripts/lib/ports';
import { AGENT_ENVIRONMENT, AGENT_NODE_FLAGS } from '../src/cli/agent-node-flags';
import { StatorBenchCluster } from './lib/cluster';
import { cleanupAll, killPid, track, trackChild, untrack } from './lib/cleanup';
import { waitHealthy } from './lib/health';
import { httpCode } from './lib/http';
import { AgentVariant, parseVariants, writeLauncher } from './lib/agent-variant';
import { findRepoRoot, preflight } from './lib/preflight';
import { memory, MemoryReading } from './lib/proc';
import { stackFloorScript } from './lib/reference-servers';
import { loadAverage, log, median, pollUntil, sleep } from './lib/util';
import { FAST } from './run';

/**
 * `node dist/bench/memory-share.js` (after `npm run build`; under the cluster lock): Stator's own RSS share above
 * the stack's floor (issue 33: at most 15 MiB). Each round starts the floor servers (no Stator code) and a 3-node
 * cluster per agent variant side by side, in a rotated order, waits BENCH_SHARE_SETTLE_S (120) after the last is up
 * (an agent holds its start-up garbage, about 24 MiB, until V8 shrinks its heap 50-70 s after it started),
 * then reads the RSS of each floor and of each cluster's leader and one replica from /proc, and asks each process
 * (a `--require`d probe, SIGUSR2) for where its memory is: V8's heap spaces, code and bytecode, the modules loaded.
 * BENCH_SHARE_ROUNDS rounds (3); BENCH_SHARE_VARIANTS as BENCH_HEALTH_VARIANTS (bench/lib/agent-variant.ts).
 */
const REPO_ROOT = findRepoRoot(__dirname);
const ROUNDS = Number(process.env.BENCH_SHARE_ROUNDS ?? 3);
const SETTLE_MS = Number(process.env.BENCH_SHARE_SETTLE_S ?? 120) * 1000;
const VARIANTS = process.env.BENCH_SHARE_VARIANTS ?? 'this-checkout';
/** A directory: the last round's processes write heap snapshots, copied there as `<process label>.heapsnapshot`. */
const SNAPSHOTS_TO = process.env.BENCH_SHARE_SNAPSHOTS;
const FLOORS: [label: string, packages: string[]][] = [
  ['floor', []],
  ['floor + class-validator', ['class-validator']],
];

/** Preloaded into every process measured: on SIGUSR2 it writes `probe-<pid>.json` beside itself. */
const PROBE = `const v8 = require('node:v8'), fs = require('node:fs'), path = require('node:path');
process.on('SIGUSR2', () => {
  const MiB = (n) => +(n / 1048576).toFixed(2);
  const modules = {};
  for (const file of Object.keys(require.cache)) {
    const tail = file.split('node_modules/').pop();
    const group = file.includes('node_modules/') ? tail.split('/').slice(0, tail.startsWith('@') ? 2 : 1).join('/') : 'stator';
    let size = 0; try { size = fs.statSync(file).size; } catch {}
    const entry = (modules[group] ??= { files: 0, kib: 0 });
    entry.files++; entry.kib += size / 1024;
  }
  const code = v8.getHeapCodeStatistics();
  fs.writeFileSync(path.join(__dirname, 'probe-' + process.pid + '.json'), JSON.stringify({
    usage: Object.fromEntries(Object.entries(process.memoryUsage()).map(([k, v]) => [k, MiB(v)])),
    spaces: Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, MiB(s.space_used_size)])),
    code: { bytecodeAndMetadata: MiB(code.bytecode_and_metadata_size), codeAndMetadata: MiB(code.code_and_metadata_size), scriptSources: MiB(code.external_script_source_size) },
    modules,
  }));
  // The last round's processes also leave a heap snapshot (bench/memory-share.ts: BENCH_SHARE_SNAPSHOTS).
  if (fs.existsSync(path.join(__dirname, 'snapshots-wanted'))) fs.renameSync(v8.writeHeapSnapshot(path.join(__dirname, 'writing-' + process.pid)), path.join(__dirname, 'heap-' + process.pid + '.heapsnapshot'));
});
`;

interface Probe {
  usage: Record<string, number>;
  spaces: Record<string, number>;
  code: Record<string, number>;
  modules: Record<string, { files: number; kib: number }>;
}
interface Sample {
  rss: MemoryReading;
  probe: Probe | null;
}

async function startFloor(dir: string, label: string, packages: string[], probe: string) {
  const file = join(dir, `floor-${label.replace(/\W+/g, '-')}.js`);
  writeFileSync(file, stackFloorScript(REPO_ROOT, packages));
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [...AGENT_NODE_FLAGS, '--require', probe, file, String(port)], {
    stdio: 'ignore',
    cwd: REPO_ROOT,
    env: { ...process.env, ...AGENT_ENVIRONMENT },
  });
  trackChild(child);
  const up = await pollUntil(
    async () => (await httpCode(`http://127.0.0.1:${port}/primary`, 500)) === 200,
    15_000,
    100,
  );
  if (!up || !child.pid) throw new Error(`${label} did not start`);
  return child;
}

async function sample(label: string, pid: number | null | undefined, probeDir: string): Promise<Sample | null> {
  const rss = pid ? memory(pid) : null;
  if (!pid || !rss) return null;
  const file = join(probeDir, `probe-${pid}.json`);
  process.kill(pid, 'SIGUSR2');
  await pollUntil(async () => existsSync(file), 5_000, 50);
  const snapshot = join(probeDir, `heap-${pid}.heapsnapshot`);
  if (SNAPSHOTS_TO && (await pollUntil(async () => existsSync(snapshot), 30_000, 200))) {
    mkdirSync(SNAPSHOTS_TO, { recursive: true });
    copyFileSync(snapshot, join(SNAPSHOTS_TO, `${label.replace(/\W+/g, '-')}.heapsnapshot`));
  }
  try {
    return { rss, probe: JSON.parse(readFileSync(file, 'utf8')) as Probe };
  } catch {
    return { rss, probe: null };
  }
}

const MiB = (kib: number) => (kib / 1024).toFixed(1);
const med = (values: number[]) => (values.length ? median(values) : NaN);

function table(samples: Map<string, Sample[]>, floorLabel: string): string[] {
  const floorRss = med(samples.get(floorLabel)!.map((s) => s.rss.rss));
  const lines = [
    `| process | RSS median | readings | anonymous | file-backed | share above ${floorLabel} | heapUsed | code + bytecode | script sources | modules (files, source KiB) |`,
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const [label, taken] of samples) {
    const rss = med(taken.map((s) => s.rss.rss));
    const probes = taken.map((s) => s.probe).filter((p): p is Probe => !!p);
    const p = (get: (probe: Probe) => number) => med(probes.map(get)).toFixed(1);
    const files = med(probes.map((x) => Object.values(x.modules).reduce((n, m) => n + m.files, 0)));
    const kib = med(probes.map((x) => Object.values(x.modules).reduce((n, m) => n + m.kib, 0)));
    lines.push(
      `| ${label} | **${MiB(rss)}** | ${taken.map((s) => MiB(s.rss.rss)).join(', ')} | ${MiB(med(taken.map((s) => s.rss.rssAnon)))} | ${MiB(med(taken.map((s) => s.rss.rssFile)))} | ${label.startsWith('floor') ? '' : MiB(rss - floorRss)} | ${p((x) => x.usage.heapUsed)} | ${p((x) => x.code.bytecodeAndMetadata + x.code.codeAndMetadata)} | ${p((x) => x.code.scriptSources)} | ${files}, ${kib.toFixed(0)} |`,
    );
  }
  return lines;
}

/** Packages each agent variant loads beyond the floor (the first probe of each), with their files and source KiB. */
function moduleDiff(samples: Map<string, Sample[]>, floorLabel: string): string[] {
  const floor = samples.get(floorLabel)!.find((s) => s.probe)?.probe?.modules ?? {};
  const lines: string[] = [];
  for (const [label, taken] of samples) {
    if (label.startsWith('floor')) continue;
    const modules = taken.find((s) => s.probe)?.probe?.modules ?? {};
    const extra = Object.entries(modules)
      .map(([group, m]) => [group, m.files - (floor[group]?.files ?? 0), m.kib - (floor[group]?.kib ?? 0)] as const)
      .filter(([, files]) => files > 0)
      .sort((a, b) => b[2] - a[2]);
    lines.push(
      `- ${label}: ${extra.map(([group, files, kib]) => `${group} (${files}, ${kib.toFixed(0)})`).join(', ')}`,
    );
  }
  return lines;
}

async function main(): Promise<void> {
  preflight([]);
  const dir = mkdtempSync(join(tmpdir(), 'stator-bench-share-'));
  chmodSync(dir, 0o755);
  const probe = join(dir, 'probe.js');
  writeFileSync(probe, PROBE);
  const variants: AgentVariant[] = parseVariants(VARIANTS, REPO_ROOT, join(dir, 'builds')).map((v) => ({
    ...v,
    nodeFlags: [...v.nodeFlags, '--require', probe],
  }));
  const samples = new Map<string, Sample[]>();
  const add = (label: string, s: Sample | null) => s && samples.set(label, [...(samples.get(label) ?? []), s]);
  for (const [label] of FLOORS) samples.set(label, []);
  for (const v of variants) for (const role of ['leader', 'replica']) samples.set(`${v.label} ${role}`, []);
  const loadAtStart = loadAverage();
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const starters = [
        ...FLOORS.map(([label, packages]) => ({ label, floor: packages })),
        ...variants.map((variant) => ({ label: variant.label, variant })),
      ];
      const order = starters.map((_, i) => starters[(i + round - 1) % starters.length]);
      const floors: [string, ChildProcess][] = [];
      const clusters: [string, StatorBenchCluster, string][] = [];
      for (const starter of order) {
        if ('floor' in starter) {
          floors.push([starter.label, await startFloor(dir, starter.label, starter.floor!, probe)]);
          continue;
        }
        const variant = starter.variant!;
        const cluster = await StatorBenchCluster.start(join(dir, `r${round}-${variant.label}`), FAST, 'share', {
          label: variant.label,
          agentProgram: writeLauncher(variant, dir),
        });
        track(cluster);
        const { leader } = await waitHealthy(cluster, 180_000);
        clusters.push([variant.label, cluster, leader.name]);
        log(`round ${round}: ${variant.label} healthy (leader ${leader.name})`);
      }
      await sleep(SETTLE_MS);
      if (SNAPSHOTS_TO && round === ROUNDS) writeFileSync(join(dir, 'snapshots-wanted'), '');
      for (const [label, child] of floors) add(label, await sample(label, child.pid, dir));
      for (const [label, cluster, leader] of clusters) {
        add(
          `${label} leader`,
          await sample(`${label} leader`, cluster.nodes.find((n) => n.name === leader)!.agentPid(), dir),
        );
        add(
          `${label} replica`,
          await sample(`${label} replica`, cluster.nodes.find((n) => n.name !== leader)!.agentPid(), dir),
        );
      }
      for (const [, child] of floors) if (child.pid) killPid(child.pid);
      for (const [, cluster] of clusters) {
        await cluster.stop();
        untrack(cluster);
      }
    }
    const lines = [
      `# Stator's RSS share above the floor, ${new Date().toISOString().slice(0, 16)}Z`,
      '',
      `${ROUNDS} rounds; in each, the floor servers and a 3-node cluster per variant side by side, read ${SETTLE_MS / 1000} s`,
      `after the last was up (MiB; heap and code from the process itself). Load average at start ${loadAtStart}, at the end ${loadAverage()}.`,
      `Variants: \`${VARIANTS}\`.`,
      '',
      ...table(samples, 'floor'),
      '',
      'Share above the floor with class-validator loaded too (the required stack as issue 33 lists it):',
      '',
      ...variants.flatMap((v) =>
        ['leader', 'replica'].map((role) => {
          const agent = med(samples.get(`${v.label} ${role}`)!.map((s) => s.rss.rss));
          const floor = med(samples.get('floor + class-validator')!.map((s) => s.rss.rss));
          return `- ${v.label} ${role}: ${MiB(agent - floor)} MiB`;
        }),
      ),
      '',
      'Packages loaded beyond the floor (files, source KiB; `stator` is dist/src):',
      '',
      ...moduleDiff(samples, 'floor'),
    ];
    const text = lines.join('\n');
    process.stdout.write(`\n${text}\n`);
    const out = join(REPO_ROOT, 'bench', 'results', `${new Date().toISOString().slice(0, 10)}-memory-share-raw.md`);
    mkdirSync(join(REPO_ROOT, 'bench', 'results'), { recursive: true });
    writeFileSync(out, `${text}\n`);
    log(`written to ${out}`);
  } finally {
    await cleanupAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().catch(async (error) => {
    process.stderr.write(`${(error as Error).stack ?? error}\n`);
    await cleanupAll();
    process.exit(1);
  });
}
