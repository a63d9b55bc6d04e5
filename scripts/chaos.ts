import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FAULTS } from './lib/chaos/faults';
import {
  ChaosBed,
  chooseBed,
  formatReport,
  ReplicationMode,
  roundFailed,
  runChaos,
  splitFaultList,
} from './lib/chaos/run';
import { removeDir, tmpDir } from './lib/tmp';

/**
 * `npm run chaos -- [--seeds 1,2] [--rounds 12] [--mode async|sync|quorum] [--bed loopback|netns] [--faults 'name,name']`:
 * a seeded fault schedule over a 3-node cluster per seed (on loopback, or with `--bed netns` each node and each of 3
 * etcd members in a network namespace of its own, root only: the network faults run there, and a named one picks
 * it), in the given replication mode, two read-write clients writing every 50 ms, and a checker; during each round
 * every node's served memory (GET /stator/memory) is compared with the replay of its event log at the same instants
 * (memory-replay.ts). Prints a table and writes it to `chaos/results/<date>-<mode>[-netns].md`. Takes about a
 * minute per round.
 */
async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const value = (flag: string, fallback: string) => {
    const at = argv.indexOf(flag);
    return at >= 0 && argv[at + 1] ? argv[at + 1] : fallback;
  };
  const seeds = value('--seeds', '1,2').split(',').map(Number);
  const rounds = Number(value('--rounds', '12'));
  const mode = value('--mode', 'async') as ReplicationMode;
  const askedBed = argv.includes('--bed') ? (value('--bed', '') as ChaosBed) : undefined;
  // Only these faults (their names as in the table), to look into one kind of round; the opt-in ones run only so.
  const faults = argv.includes('--faults') ? splitFaultList(value('--faults', '')) : undefined;
  if (
    seeds.some((seed) => !Number.isInteger(seed)) ||
    !Number.isInteger(rounds) ||
    rounds < 1 ||
    !['async', 'sync', 'quorum'].includes(mode) ||
    (askedBed !== undefined && !['loopback', 'netns'].includes(askedBed))
  ) {
    throw new Error(
      "usage: npm run chaos -- [--seeds 1,2] [--rounds 12] [--mode async|sync|quorum] [--bed loopback|netns] [--faults 'name,name']",
    );
  }
  const unknown = faults?.filter((name) => !FAULTS.some((fault) => fault.name === name)) ?? [];
  if (unknown.length > 0)
    throw new Error(`unknown faults: ${unknown.join(', ')}; known: ${FAULTS.map((fault) => fault.name).join(', ')}`);
  const bed = chooseBed(askedBed, faults);
  const reports = [];
  for (const seed of seeds) {
    const baseDir = tmpDir(`stator-chaos-${seed}-`);
    try {
      reports.push(
        await runChaos({
          seed,
          rounds,
          baseDir,
          mode,
          bed,
          faults,
          log: (line) => process.stdout.write(`[seed ${seed}] ${line}\n`),
        }),
      );
    } finally {
      if (!process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
    }
  }
  const table = formatReport(reports);
  const dir = join(__dirname, '..', '..', 'chaos', 'results');
  mkdirSync(dir, { recursive: true });
  const suffix = bed === 'netns' ? `${mode}-netns` : mode;
  const file = join(dir, `${new Date().toISOString().slice(0, 16).replace(':', '')}-${suffix}.md`);
  const command = `npm run chaos -- --seeds ${seeds.join(',')} --rounds ${rounds} --mode ${mode} --bed ${bed}`;
  writeFileSync(file, `# ${command}${faults ? ` --faults "${faults.join(',')}"` : ''}\n\n${table}\n`);
  process.stdout.write(`\n${table}\n\nwritten to ${file}\n`);
  const failed = reports.some(
    (r) => r.lost.length > 0 || r.splitBrain.length > 0 || r.diverging.length > 0 || r.rounds.some(roundFailed),
  );
  process.exit(failed ? 1 : 0);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(2);
});
