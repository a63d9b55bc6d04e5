import { formatReport, runChaos } from '../../scripts/lib/chaos/run';
import { removeDir, tmpDir } from '../../scripts/lib/tmp';

/**
 * The short, deterministic subset of `npm run chaos` that runs in `npm test`: one seed, three of
 * the faults (a hung leader PostgreSQL, a leader host losing power, a switchover), two read-write
 * clients, and the checker. Agents run from `dist/`: run `npm run build` first.
 */
jest.setTimeout(420_000);

it('loses no acknowledged write, never has two primaries acknowledging writes, and recovers from every fault', async () => {
  const baseDir = tmpDir('stator-chaos-test-');
  try {
    const report = await runChaos({
      seed: 7,
      rounds: 3,
      baseDir,
      faults: [
        'SIGSTOP of the leader PostgreSQL for ttl + 5 s',
        'kill -9 of the leader agent and its PostgreSQL',
        'switchover',
      ],
    });
    console.log(formatReport([report]));
    expect(report.rounds.map((round) => round.fault).sort()).toEqual(
      [
        'SIGSTOP of the leader PostgreSQL for ttl + 5 s',
        'kill -9 of the leader agent and its PostgreSQL',
        'switchover',
      ].sort(),
    );
    expect(report.rounds.filter((round) => round.recoveryMs === null)).toEqual([]);
    expect(report.acknowledged).toBeGreaterThan(100);
    expect(report.lost).toEqual([]);
    expect(report.splitBrain).toEqual([]);
    expect(report.diverging).toEqual([]);
  } finally {
    if (!process.env.STATOR_KEEP_TEST_DIRS) removeDir(baseDir);
  }
});
