/**
 * The exhaustive search's set of states seen, kept as hashes of their keys (hash compaction) so that
 * millions of states fit: two independent 53-bit hashes per key. Only a key whose both hashes equal
 * another's is taken as seen; with n states the chance of that for any pair is about n² / 2^107
 * (below 10^-18 at 10 million states), the price of storing 16 bytes instead of a 300-character key.
 */

/** cyrb53 (public domain): a fast 53-bit string hash; `seed` gives independent hashes. */
function hash53(text: string, seed: number): number {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ seed;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507);
  h1 ^= Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507);
  h2 ^= Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

export class StateStore {
  /** First hash to the id of the first state that had it. */
  private readonly byFirst = new Map<number, number>();
  /** Second hash of each id's state. */
  private readonly second: number[] = [];
  /** States whose first hash another state had already (rare): both hashes. */
  private readonly clashes = new Set<string>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Records the key; false when a state with this key was recorded before. */
  add(key: string): boolean {
    const first = hash53(key, 0);
    const second = hash53(key, 0x9e3779b9);
    const id = this.byFirst.get(first);
    if (id === undefined) {
      this.byFirst.set(first, this.count);
      this.second.push(second);
    } else {
      if (this.second[id] === second) return false;
      const both = `${first}:${second}`;
      if (this.clashes.has(both)) return false;
      this.clashes.add(both);
      this.second.push(second);
    }
    this.count++;
    return true;
  }
}
