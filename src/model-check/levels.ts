import { closeSync, fsyncSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import { ClusterModel } from './model';

/** One level of the breadth-first search: the states found at one depth, to expand in the next. */
export interface Level {
  readonly length: number;
  push(c: ClusterModel, id: number): void;
  entries(): Iterable<{ c: ClusterModel; id: number }>;
  /** Frees what it holds (its file); once is enough, twice does no harm. */
  discard(): void;
}

export class MemoryLevel implements Level {
  private readonly states: { c: ClusterModel; id: number }[] = [];

  get length(): number {
    return this.states.length;
  }

  push(c: ClusterModel, id: number): void {
    this.states.push({ c, id });
  }

  entries(): Iterable<{ c: ClusterModel; id: number }> {
    return this.states;
  }

  discard(): void {
    this.states.length = 0;
  }
}

const CHUNK = 8 * 1024 * 1024;
let levelsMade = 0;

/**
 * A level kept on disk (`--compact`): each state serialised (node:v8) behind its id and length, written in
 * 8 MiB chunks and read back in order. A level of millions of states would otherwise hold gigabytes of
 * heap: about 1.5 KB a state on disk against some 3 KB as objects.
 *
 * Without `dir` the file has no name: it is removed as soon as it is opened, so the kernel frees it when the
 * process ends, however it ends (SIGINT, SIGTERM, SIGKILL, out of memory): a killed run leaves nothing in the
 * temporary directory. With `dir` (`--checkpoint`) it is a named file there, which a checkpoint links to.
 */
export class DiskLevel implements Level {
  /** The file's name while it has one (`dir` given, or opened from a checkpoint). */
  readonly file: string | null;
  private readonly fd: number;
  private buffer: Buffer;
  private used = 0;
  private written = 0;
  private count = 0;
  private discarded = false;

  /** `chunkBytes`: how much is written or read at a time; `existing`: a level written before (see open). */
  constructor(
    private readonly chunkBytes = CHUNK,
    dir?: string,
    existing?: { file: string; count: number },
  ) {
    this.buffer = Buffer.alloc(existing ? 0 : chunkBytes);
    if (existing) {
      this.file = existing.file;
      this.fd = openSync(existing.file, 'r');
      this.count = existing.count;
    } else if (dir) {
      this.file = join(dir, `level-${process.pid}-${levelsMade++}`);
      this.fd = openSync(this.file, 'w+');
    } else {
      const temporary = mkdtempSync(join(tmpdir(), 'stator-model-check-'));
      this.fd = openSync(join(temporary, 'level'), 'w+');
      rmSync(temporary, { recursive: true, force: true });
      this.file = null;
    }
  }

  /** A level written before (a checkpoint's), with `count` states, to read: discard() removes `file`. */
  static open(file: string, count: number, chunkBytes = CHUNK): DiskLevel {
    return new DiskLevel(chunkBytes, undefined, { file, count });
  }

  /** Every state written out and on disk (fsync): what a checkpoint needs before it links the file. */
  seal(): void {
    this.flush();
    fsyncSync(this.fd);
  }

  get length(): number {
    return this.count;
  }

  push(c: ClusterModel, id: number): void {
    const bytes = serialize(c);
    const need = 8 + bytes.length;
    if (this.used + need > this.buffer.length) this.flush();
    if (need > this.buffer.length) this.buffer = Buffer.alloc(need);
    this.buffer.writeUInt32LE(id, this.used);
    this.buffer.writeUInt32LE(bytes.length, this.used + 4);
    bytes.copy(this.buffer, this.used + 8);
    this.used += need;
    this.count++;
  }

  *entries(): Iterable<{ c: ClusterModel; id: number }> {
    this.flush();
    let chunk = Buffer.alloc(this.chunkBytes);
    let filled = 0;
    let position = 0;
    for (;;) {
      // A full buffer holds the start of one record longer than it: make room for the whole record.
      if (filled === chunk.length) {
        const bigger = Buffer.alloc(Math.max(2 * chunk.length, 8 + chunk.readUInt32LE(4)));
        chunk.copy(bigger, 0, 0, filled);
        chunk = bigger;
      }
      const read = readSync(this.fd, chunk, filled, chunk.length - filled, position);
      position += read;
      filled += read;
      let at = 0;
      while (filled - at >= 8 && filled - at >= 8 + chunk.readUInt32LE(at + 4)) {
        const id = chunk.readUInt32LE(at);
        const length = chunk.readUInt32LE(at + 4);
        const c = deserialize(chunk.subarray(at + 8, at + 8 + length)) as ClusterModel;
        at += 8 + length;
        yield { c, id };
      }
      if (read === 0) return;
      // What is left of the last record moves to the front; the next read goes behind it.
      chunk.copy(chunk, 0, at, filled);
      filled -= at;
    }
  }

  discard(): void {
    if (this.discarded) return;
    this.discarded = true;
    closeSync(this.fd);
    if (this.file) rmSync(this.file, { force: true });
  }

  private flush(): void {
    if (this.used === 0) return;
    writeSync(this.fd, this.buffer, 0, this.used, this.written);
    this.written += this.used;
    this.used = 0;
  }
}
