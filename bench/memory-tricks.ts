import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  chmodSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StatorBenchCluster } from './lib/cluster';
import { cleanupAll, track, untrack } from './lib/cleanup';
import { waitHealthy } from './lib/health';
import { AgentVariant, currentVariant, writeLauncher } from './lib/agent-variant';
import { findRepoRoot, preflight } from './lib/preflight';
import { memory, MemoryReading } from './lib/proc';
import { referenceServers, STACK_FLOOR_SERVER } from './lib/reference-servers';
import { loadAverage, log, sleep } from './lib/util';
import { FAST } from './run';

/**
 * `node dist/bench/memory-tricks.js` (after `npm run build`): what each start-up trick for memory saves (issue 33).
 * For every variant (this checkout's dist/, and copies of it with one trick undone), a 3-node cluster
 * is started, left to settle, and the idle RSS of its leader's and a replica's agent read; the clusters of one round
 * run side by side, and BENCH_TRICKS_ROUNDS rounds (default 3) give the median. The stack's floor server (no Stator
 * code) is measured once per variant that changes how the dependencies load.
 */
const REPO_ROOT = findRepoRoot(__dirname);
const ROUNDS = Number(process.env.BENCH_TRICKS_ROUNDS ?? 3);
const SETTLE_MS = Number(process.env.BENCH_TRICKS_SETTLE_S ?? 45) * 1000;

/** A copy of this checkout's dist/ with `edits` applied: file (under dist/src) -> [text, replacement]. */
interface Undo {
  label: string;
  edits: [file: string, from: string, to: string][];
  /** The floor server loads the dependencies through load-dependencies-lightly.js: measure it again. */
  floor: boolean;
}

const LIGHTLY = 'cli/load-dependencies-lightly.js';
const NO_INTL: Undo['edits'][number] = [
  LIGHTLY,
  /[^\n]*withPropertyReplaced\)\(Intl,[^\n]*/.source,
  "require('@nestjs/common');",
];

/**
 * The tricks still in the code, each undone. (The three that saved under 5 MiB were measured the same way and removed:
 * hiding the global `Response` while pg loaded, @nestjs/swagger's and class-validator's decorators applied later;
 * docs/benchmarks.md has their figures.)
 */
const UNDOS: Undo[] = [{ label: 'no-intl-swap', edits: [NO_INTL], floor: true }];

function variantOf(undo: Undo, dir: string): AgentVariant {
  const checkout = join(dir, undo.label);
  mkdirSync(checkout, { recursive: true });
  cpSync(join(REPO_ROOT, 'dist'), join(checkout, 'dist'), { recursive: true });
  cpSync(join(REPO_ROOT, 'bin'), join(checkout, 'bin'), { recursive: true });
  cpSync(join(REPO_ROOT, 'package.json'), join(checkout, 'package.json'));
  if (!existsSync(join(checkout, 'node_modules')))
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(checkout, 'node_modules'));
  for (const [file, from, to] of undo.edits) {
    const path = join(checkout, 'dist', 'src', file);
    const text = readFileSync(path, 'utf8');
    const edited = text.replace(new RegExp(from), to);
    if (edited === text) throw new Error(`${undo.label}: ${from} not found in ${path}`);
    writeFileSync(path, edited);
  }
  return { ...currentVariant(REPO_ROOT, undo.label), checkout };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const MiB = (kib: number) => (kib / 1024).toFixed(1);
type Role = 'leader' | 'replica';
const UNREAD: MemoryReading = { rss: NaN, rssAnon: NaN, rssFile: NaN, rssShmem: NaN, pss: NaN, threads: NaN };

async function main(): Promise<void> {
  preflight([]);
  const dir = mkdtempSync(join(tmpdir(), 'stator-bench-tricks-'));
  chmodSync(dir, 0o755);
  const variants = [currentVariant(REPO_ROOT, 'as-shipped'), ...UNDOS.map((undo) => variantOf(undo, dir))];
  const readings = new Map<string, Record<Role, MemoryReading[]>>(
    variants.map((v) => [v.label, { leader: [], replica: [] }]),
  );
  const loadAtStart = loadAverage();
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      // Each round starts the variants in another order, so that none always starts on the busiest machine.
      const order = variants.map((_, i) => variants[(i + round - 1) % variants.length]);
      const clusters: { label: string; cluster: StatorBenchCluster; leader: string }[] = [];
      for (const variant of order) {
        const agentProgram = writeLauncher(variant, dir);
        const cluster = await StatorBenchCluster.start(join(dir, `r${round}-${variant.label}`), FAST, 'tricks', {
          label: variant.label,
          agentProgram,
        });
        track(cluster);
        const { leader } = await waitHealthy(cluster, 180_000);
        clusters.push({ label: variant.label, cluster, leader: leader.name });
        log(`round ${round}: ${variant.label} healthy (leader ${leader.name})`);
      }
      await sleep(SETTLE_MS);
      for (const { label, cluster, leader } of clusters) {
        const leaderNode = cluster.nodes.find((n) => n.name === leader)!;
        const replicaNode = cluster.nodes.find((n) => n.name !== leader)!;
        const readingOf = (pid: number | null) => (pid ? memory(pid) : null) ?? UNREAD;
        readings.get(label)!.leader.push(readingOf(leaderNode.agentPid()));
        readings.get(label)!.replica.push(readingOf(replicaNode.agentPid()));
      }
      for (const { cluster } of clusters) {
        await cluster.stop();
        untrack(cluster);
      }
    }
    const floors: [string, number][] = [];
    for (const variant of [variants[0], ...variants.filter((v) => UNDOS.find((u) => u.label === v.label)?.floor)]) {
      const floor = (await referenceServers(variant.checkout, 1, 1)).find((r) => r.server === STACK_FLOOR_SERVER);
      floors.push([variant.label, floor?.memoryIdle?.rss ?? NaN]);
    }
    const base = readings.get('as-shipped')!;
    const row = (label: string, role: Role) => {
      const taken = readings.get(label)![role];
      const field = (name: 'rss' | 'rssAnon' | 'rssFile') => median(taken.map((r) => r[name]));
      const added = field('rss') - median(base[role].map((r) => r.rss));
      return `| ${label} | ${role} | ${MiB(field('rss'))} | ${MiB(field('rssAnon'))} | ${MiB(field('rssFile'))} | ${taken.map((r) => MiB(r.rss)).join(', ')} | ${label === 'as-shipped' ? '' : MiB(added)} |`;
    };
    const lines = [
      `# Memory tricks, ${new Date().toISOString().slice(0, 16)}Z`,
      '',
      `Idle agent RSS (MiB), ${SETTLE_MS / 1000} s after the cluster was healthy, median of ${ROUNDS} starts; load average at start ${loadAtStart}.`,
      '',
      '| variant | agent | RSS | anonymous | file-backed | RSS readings | RSS added vs as shipped |',
      '|---|---|---|---|---|---|---|',
      ...variants.flatMap((v) => [row(v.label, 'leader'), row(v.label, 'replica')]),
      '',
      `The floor server (${STACK_FLOOR_SERVER}), RSS 15 s after its first answer:`,
      '',
      ...floors.map(([label, rss]) => `- ${label}: ${MiB(rss)} MiB`),
    ].join('\n');
    process.stdout.write(`\n${lines}\n`);
    const out = join(REPO_ROOT, 'bench', 'results', `${new Date().toISOString().slice(0, 10)}-memory-tricks.md`);
    mkdirSync(join(REPO_ROOT, 'bench', 'results'), { recursive: true });
    writeFileSync(out, `${lines}\n`);
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
