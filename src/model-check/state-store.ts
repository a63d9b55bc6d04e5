/** The exhaustive search's set of states seen, by their keys (symmetry.ts makes renamed states share one). */
export interface StateStore {
  readonly size: number;
  /** Records the key; false when a state with this key was recorded before. */
  add(key: string): boolean;
}

/**
 * Every key kept whole: exact. The default (the unit suite's searches and `npm run model-check`'s
 * default budget); about 250 bytes a state.
 */
export class KeySet implements StateStore {
  private readonly keys = new Set<string>();

  get size(): number {
    return this.keys.size;
  }

  add(key: string): boolean {
    if (this.keys.has(key)) return false;
    this.keys.add(key);
    return true;
  }
}

/**
 * Hash compaction for searches of millions of states (`--compact`): each key is kept as a 64-bit
 * fingerprint (two independent 32-bit hashes) in an open-addressed table, 8 bytes a slot. Two keys
 * with one fingerprint count as one state, so a state can be missed: with n states the chance of any
 * such collision is about n² / 2⁶⁵ (15 million states: 6 in a million), the trade of SPIN's hash-compact
 * mode. A violation it reports is still a real run: only the set of states seen is approximate.
 */
export class FingerprintSet implements StateStore {
  private slots: Uint32Array;
  private count = 0;

  /** `capacity`: slots to start with, a power of two; the table doubles once half of them are taken. */
  constructor(capacity = 1 << 20) {
    this.slots = new Uint32Array(2 * capacity);
  }

  get size(): number {
    return this.count;
  }

  add(key: string): boolean {
    // FNV-1a and a multiply-xorshift hash over the UTF-16 units; (0, 0) marks an empty slot.
    let a = 0x811c9dc5;
    let b = 0x9e3779b9;
    for (let i = 0; i < key.length; i++) {
      const unit = key.charCodeAt(i);
      a = Math.imul(a ^ unit, 0x01000193);
      b = Math.imul(b ^ unit, 0x5bd1e995);
      b ^= b >>> 15;
    }
    a >>>= 0;
    b = (b | 1) >>> 0;
    if (!this.insert(a, b)) return false;
    this.count++;
    if (this.count * 2 > this.slots.length / 2) this.grow();
    return true;
  }

  /** False when (a, b) is present already. */
  private insert(a: number, b: number): boolean {
    const mask = this.slots.length / 2 - 1;
    for (let at = a & mask; ; at = (at + 1) & mask) {
      const x = this.slots[2 * at];
      const y = this.slots[2 * at + 1];
      if (x === 0 && y === 0) {
        this.slots[2 * at] = a;
        this.slots[2 * at + 1] = b;
        return true;
      }
      if (x === a && y === b) return false;
    }
  }

  private grow(): void {
    const old = this.slots;
    this.slots = new Uint32Array(old.length * 2);
    for (let i = 0; i < old.length; i += 2) if (old[i] !== 0 || old[i + 1] !== 0) this.insert(old[i], old[i + 1]);
  }
}
