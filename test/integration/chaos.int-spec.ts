import { formatReport, runChaos } from '../../scripts/lib/chaos/run';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';

/**
 * The short, deterministic subset of `npm run chaos` that runs in `npm test`: one seed, four of
 * the faults (a hung leader PostgreSQL, a leader host losing power, a switchover, 150 ms one-way on
 * the leader's cluster link), two read-write clients, and the checker, in the network-namespace bed
 * (root: each node and each of 3 etcd members in a namespace of its own; the network fault picks it).
 * Agents run from `dist/`: run `npm run build` first.
 */
jest.setTimeout(420_000);

const FAULTS = [
  'SIGSTOP of the leader PostgreSQL for ttl + 5 s',
  'kill -9 of the leader agent and its PostgreSQL',
  'switchover',
  "150 ms one-way delay on the leader's cluster link for ttl + 10 s",
];

it('loses no acknowledged write, never has two primaries acknowledging writes, and recovers from every fault', async () => {
  const baseDir = tmpDir('stator-chaos-test-');
  try {
    const report = await runChaos({
      seed: 7,
      rounds: 4,
      baseDir,
      faults: FAULTS,
    });
    console.log(formatReport([report]));
    expect(report.rounds.map((round) => round.fault).sort()).toEqual([...FAULTS].sort());
    // 150 ms one-way: a keepalive takes 0.3 s of its 4 s budget, the leader keeps its key (docs/chaos-and-safety.md).
    const delayed = report.rounds.find((round) => round.fault === FAULTS[3])!;
    expect(delayed.leaderAfter).toBe(delayed.leaderBefore);
    expect(report.rounds.filter((round) => round.recoveryMs === null)).toEqual([]);
    expect(report.acknowledged).toBeGreaterThan(100);
    expect(report.lost).toEqual([]);
    expect(report.splitBrain).toEqual([]);
    expect(report.diverging).toEqual([]);
  } finally {
    if (!process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
  }
});
