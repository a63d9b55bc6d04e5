import { Action, ACTION_KINDS } from './model-types';
import { NODE_NAMES } from './model';

/** An action as one byte: its kind's index and its node (-1 to 2). */
export function actionCode(action: Action): number {
  return ACTION_KINDS.indexOf(action.kind) * 4 + action.node + 1;
}

/** The action a code stands for, labelled as enabledActions labels it. */
export function actionOf(code: number): Action {
  const kind = ACTION_KINDS[code >> 2];
  const node = (code & 3) - 1;
  return { kind, node, label: node >= 0 ? `${kind} ${NODE_NAMES[node]}` : kind };
}

/**
 * How the exhaustive search reached each state: its parent's id and the step from it, in two typed arrays
 * (5 bytes a state) instead of an array of numbers and one of Action objects, which held millions of objects
 * for the garbage collector to trace at every full collection.
 */
export class PathTable {
  private parents: Int32Array;
  private codes: Uint8Array;
  private count = 0;

  constructor(capacity = 1 << 16) {
    this.parents = new Int32Array(capacity);
    this.codes = new Uint8Array(capacity);
  }

  get size(): number {
    return this.count;
  }

  /** Records state `size` (the next id), reached from `parent` by `code` (-1 and 0 for the start). */
  push(parent: number, code: number): void {
    if (this.count === this.parents.length) {
      const parents = new Int32Array(this.count * 2);
      parents.set(this.parents);
      this.parents = parents;
      const codes = new Uint8Array(this.count * 2);
      codes.set(this.codes);
      this.codes = codes;
    }
    this.parents[this.count] = parent;
    this.codes[this.count] = code;
    this.count++;
  }

  /** The steps from the start (id 0) to state `id`. */
  pathTo(id: number): Action[] {
    const path: Action[] = [];
    for (let at = id; at > 0; at = this.parents[at]) path.push(actionOf(this.codes[at]));
    return path.reverse();
  }

  /** Its contents, to write to a checkpoint. */
  toBuffers(): { parents: Buffer; codes: Buffer } {
    return {
      parents: Buffer.from(this.parents.buffer, this.parents.byteOffset, this.count * 4),
      codes: Buffer.from(this.codes.buffer, this.codes.byteOffset, this.count),
    };
  }

  /** A table as toBuffers gave it. */
  static fromBuffers(parents: Buffer, codes: Buffer): PathTable {
    const count = codes.length;
    if (parents.length !== count * 4)
      throw new Error(`path table: ${parents.length} bytes of parents for ${count} steps`);
    const table = new PathTable(Math.max(1 << 16, count * 2));
    const view = new Int32Array(count);
    Buffer.from(view.buffer).set(parents);
    table.parents.set(view);
    table.codes.set(codes);
    table.count = count;
    return table;
  }
}
