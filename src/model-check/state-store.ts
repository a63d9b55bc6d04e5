/** The exhaustive search's set of states seen, by their keys (symmetry.ts makes renamed states share one). */
export interface StateStore {
  readonly size: number;
  /** Records the key; false when a state with this key was recorded before. */
  add(key: string): boolean;
}

/**
 * Every key kept whole: exact. The default (the unit suite's searches and `npm run model-check`'s
 * default budget); about 260 bytes a state. The keys are kept as UTF-8 bytes in large buffers outside
 * the JavaScript heap, found through an open-addressed table of their hashes: a Set of a million key
 * strings made every young-generation collection trace and copy them (a third of the search's time went
 * to the garbage collector), where these buffers are invisible to it. Two keys are one only when their
 * bytes are equal: no state is ever missed.
 */
export class KeySet implements StateStore {
  private readonly chunks: Buffer[] = [];
  private chunk: Buffer;
  private used = 0;
  /** Per slot: the key's record number + 1 (0: empty), and its hash. */
  private refs: Int32Array;
  private hashes: Uint32Array;
  /** Per record: its chunk, where it starts there, and its length in bytes. */
  private chunkOf = new Int32Array(1 << 12);
  private startOf = new Int32Array(1 << 12);
  private lengthOf = new Int32Array(1 << 12);
  private count = 0;

  /** `chunkBytes`: how much each buffer of keys holds; `capacity`: slots to start with, a power of two. */
  constructor(
    private readonly chunkBytes = 64 * 1024 * 1024,
    capacity = 1 << 16,
  ) {
    // The first buffers small (a unit test's search holds a few thousand keys), doubling up to chunkBytes.
    this.chunk = Buffer.allocUnsafe(Math.min(chunkBytes, 1 << 20));
    this.chunks.push(this.chunk);
    this.refs = new Int32Array(capacity);
    this.hashes = new Uint32Array(capacity);
  }

  get size(): number {
    return this.count;
  }

  add(key: string): boolean {
    // The key's bytes go where it would be kept; only if it is new does `used` move past them.
    if (this.used + 3 * key.length > this.chunk.length) {
      this.chunk = Buffer.allocUnsafe(Math.max(Math.min(this.chunkBytes, 2 * this.chunk.length), 3 * key.length));
      this.chunks.push(this.chunk);
      this.used = 0;
    }
    const chunk = this.chunk;
    const start = this.used;
    const length = chunk.write(key, start, 'utf8');
    let h = 0x811c9dc5;
    for (let i = start; i < start + length; i++) h = Math.imul(h ^ chunk[i], 0x01000193);
    h >>>= 0;
    const mask = this.refs.length - 1;
    let at = h & mask;
    for (; this.refs[at] !== 0; at = (at + 1) & mask) {
      if (this.hashes[at] !== h) continue;
      const r = this.refs[at] - 1;
      if (this.lengthOf[r] !== length) continue;
      const other = this.chunks[this.chunkOf[r]];
      if (chunk.compare(other, this.startOf[r], this.startOf[r] + length, start, start + length) === 0) return false;
    }
    if (this.count === this.lengthOf.length) this.growRecords();
    this.chunkOf[this.count] = this.chunks.length - 1;
    this.startOf[this.count] = start;
    this.lengthOf[this.count] = length;
    this.refs[at] = ++this.count;
    this.hashes[at] = h;
    this.used += length;
    if (this.count * 2 > this.refs.length) this.growTable();
    return true;
  }

  private growRecords(): void {
    const grow = (old: Int32Array) => {
      const bigger = new Int32Array(old.length * 2);
      bigger.set(old);
      return bigger;
    };
    this.chunkOf = grow(this.chunkOf);
    this.startOf = grow(this.startOf);
    this.lengthOf = grow(this.lengthOf);
  }

  private growTable(): void {
    const { refs, hashes } = this;
    this.refs = new Int32Array(refs.length * 2);
    this.hashes = new Uint32Array(refs.length * 2);
    const mask = this.refs.length - 1;
    for (let i = 0; i < refs.length; i++) {
      if (refs[i] === 0) continue;
      let at = hashes[i] & mask;
      while (this.refs[at] !== 0) at = (at + 1) & mask;
      this.refs[at] = refs[i];
      this.hashes[at] = hashes[i];
    }
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

  /** The table as it stands, to write to a checkpoint (fromBuffer reads it back). */
  toBuffer(): Buffer {
    return Buffer.from(this.slots.buffer, this.slots.byteOffset, this.slots.byteLength);
  }

  /** A set as toBuffer gave it. */
  static fromBuffer(bytes: Buffer): FingerprintSet {
    const slots = bytes.length / 8;
    if (!Number.isInteger(slots) || slots < 1 || (slots & (slots - 1)) !== 0)
      throw new Error(`fingerprint table of ${bytes.length} bytes: not a power of two of 8-byte slots`);
    const set = new FingerprintSet(slots);
    Buffer.from(set.slots.buffer).set(bytes);
    for (let i = 0; i < set.slots.length; i += 2) if (set.slots[i] !== 0 || set.slots[i + 1] !== 0) set.count++;
    return set;
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
