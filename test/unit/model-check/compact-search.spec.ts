import { bootstrappedCluster, ClusterModel } from '../../../src/model-check/model';
import { boundsFor } from '../../../src/model-check/bounds';
import { breadthFirst } from '../../../src/model-check/search';
import { DiskLevel } from '../../../src/model-check/levels';
import { FingerprintSet, KeySet } from '../../../src/model-check/state-store';

/** `--compact`, for searches of millions of states: the same search as with whole keys and levels in memory. */
describe('the compact search (fingerprints, levels on disk)', () => {
  it.each(['off', 'on'] as const)('finds the same states, in the same order, in %s mode', (mode) => {
    const bounds = boundsFor(mode, 2, 1, 3, 1, false);
    const options = { mode, bounds, maxDepth: 4, maxStates: 2_500, progressEvery: 16 };
    const whole = breadthFirst(options);
    const compact = breadthFirst({ ...options, compact: true });
    expect(compact).toMatchObject({ states: 2_500, transitions: whole.transitions, depth: 2, violation: null });
    expect(whole).toMatchObject({ states: 2_500, depth: 2, partialLevel: true });
  });

  it.each([
    ['its 8 MiB chunks', undefined, 7_000, 997],
    // Small chunks: records cut at every offset, the length itself cut, records longer than a chunk.
    ['4 KiB chunks', 4096, 3_000, 6_007],
  ] as const)('a level on disk gives back every state in order, across %s', (_what, chunkBytes, count, spread) => {
    const level = new DiskLevel(chunkBytes);
    const states: ClusterModel[] = [];
    try {
      for (let i = 0; i < count; i++) {
        const c = bootstrappedCluster('on', true);
        c.optime = i;
        c.nodes[1].view = 'x'.repeat((i * 7919) % spread);
        states.push(c);
        level.push(c, i * 3);
      }
      const back = [...level.entries()];
      expect(back.map(({ id }) => id)).toEqual(states.map((_, i) => i * 3));
      expect(back.map(({ c }) => JSON.stringify(c))).toEqual(states.map((c) => JSON.stringify(c)));
    } finally {
      level.discard();
      level.discard();
    }
  });

  it('fingerprints tell keys apart as whole keys do, and grow past their first table', () => {
    const exact = new KeySet();
    const compact = new FingerprintSet(1 << 8);
    const disagreements: string[] = [];
    for (let i = 0; i < 60_000; i++) {
      const key = `n${i % 30_000}|${(i * 7919) % 30_000}`;
      if (compact.add(key) !== exact.add(key)) disagreements.push(key);
    }
    expect(disagreements).toEqual([]);
    expect(compact.size).toBe(30_000);
    expect(exact.size).toBe(30_000);
  });
});
