/**
 * The exhaustive search's set of states seen, by their keys (symmetry.ts makes renamed states share one).
 * Hash compaction (two 53-bit hashes per key instead of the key) was tried: the search ran six times slower
 * under Jest, for reasons not found, so the keys are kept whole; `npm run model-check` has a 6 GiB heap for them.
 */
export class StateStore {
  private readonly keys = new Set<string>();

  get size(): number {
    return this.keys.size;
  }

  /** Records the key; false when a state with this key was recorded before. */
  add(key: string): boolean {
    if (this.keys.has(key)) return false;
    this.keys.add(key);
    return true;
  }
}
