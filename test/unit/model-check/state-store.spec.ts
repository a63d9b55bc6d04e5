import { KeySet } from '../../../src/model-check/state-store';

/** The exact store of the search's keys (bytes outside the heap): a key is new exactly when a Set would say so. */
describe('the exact key set', () => {
  it('agrees with a Set across small buffers, a growing table, long and non-ASCII keys', () => {
    const keys = new KeySet(256, 4);
    const reference = new Set<string>();
    const disagreements: string[] = [];
    for (let i = 0; i < 20_000; i++) {
      const n = (i * 7919) % 6_000;
      // Keys that share a prefix and differ at the end, keys longer than a buffer, and characters past Latin-1.
      const key = n % 97 === 0 ? `${'x'.repeat(300 + n)}${n}` : n % 5 === 0 ? `é€${n}🙂` : `0,30000,1|u0r1-${n}`;
      const before = reference.size;
      reference.add(key);
      if (keys.add(key) !== (reference.size !== before)) disagreements.push(key);
    }
    expect(disagreements).toEqual([]);
    expect(keys.size).toBe(reference.size);
    expect(keys.size).toBe(6_000);
  });

  it('tells apart keys of one hash bucket by their bytes', () => {
    const keys = new KeySet(64, 2);
    expect(keys.add('ab')).toBe(true);
    expect(keys.add('abc')).toBe(true);
    expect(keys.add('ab')).toBe(false);
    expect(keys.add('')).toBe(true);
    expect(keys.add('')).toBe(false);
    expect(keys.add('\u00e9')).toBe(true);
    expect(keys.add('\u00c3\u00a9')).toBe(true);
    expect(keys.size).toBe(5);
  });
});
