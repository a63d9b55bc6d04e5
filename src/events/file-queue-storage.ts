import * as fs from 'node:fs';
import * as path from 'node:path';
import { LocalEvent, QueueStorage } from './queue-storage.port';

export const QUEUE_FILE = 'events-queue.jsonl';
/** How many leading lines of the queue file are in the store already (the file is append-only between compactions). */
const STORED_FILE = 'events-queue.stored';
/** Last seq assigned per own stream, so a restart never reuses one even when the store is unreachable. */
const SEQ_FILE = 'events-seq.json';
/**
 * The queue file is emptied once every line in it is stored and it has grown past this. Emptying it after every
 * stored batch cost a second flush (the seq counters, which the file no longer held) and a truncate per batch.
 * Until then its stored lines keep the highest seqs.
 */
export const QUEUE_FILE_EMPTIED_PAST_BYTES = 64 * 1024;
/** The stored count is written in place, padded to one width, so each batch costs one write and no rename. */
const STORED_COUNT_WIDTH = 12;

type Log = (message: string) => void;

/**
 * The durable queue as files in the state directory: `events-queue.jsonl` (one event per line, in
 * recording order), `events-queue.stored` (how many leading lines the store holds) and `events-seq.json`.
 *
 * Appends are grouped: while one write + fdatasync runs, new events gather, and the next write takes
 * them all, so a burst of transitions costs a few flushes, none on the event loop. Stored events are
 * not cut out of the file one batch at a time (a rewrite per batch is quadratic in an outage's backlog):
 * the count of stored lines moves on, and the file is emptied once every line in it is stored and it has
 * grown past QUEUE_FILE_EMPTIED_PAST_BYTES, the seq counters made durable first. A crash between two
 * writes loses at most the group in flight (not yet acknowledged to anyone but memory); a count that lags
 * re-sends events the recorder then recognises in the store. The seqs a restart starts from are the
 * highest of the seq file and of every line in the queue file, stored or not.
 */
export class FileQueueStorage implements QueueStorage {
  private readonly queuePath: string;
  private readonly storedPath: string;
  private readonly seqPath: string;
  private handle: fs.promises.FileHandle | null = null;
  private storedHandle: fs.promises.FileHandle | null = null;
  /** Bumped by a rewrite: a write in flight on the replaced file must not count its lines. */
  private generation = 0;
  private handleGeneration = -1;
  private storedHandleGeneration = -1;
  private chain: Promise<void> = Promise.resolve();
  private pendingLines: string[] = [];
  private writeScheduled = false;
  private countScheduled = false;
  private linesInFile = 0;
  private bytesInFile = 0;
  private storedLines = 0;
  private seqs: Record<string, number> = {};
  private closed = false;

  constructor(
    private readonly dir: string,
    private readonly warn: Log,
  ) {
    this.queuePath = path.join(dir, QUEUE_FILE);
    this.storedPath = path.join(dir, STORED_FILE);
    this.seqPath = path.join(dir, SEQ_FILE);
  }

  /** Reads what a previous run left, and writes the queue again compacted when it held stored or torn lines. */
  load(): { events: LocalEvent[]; seqs: Record<string, number> } {
    fs.mkdirSync(this.dir, { recursive: true });
    const seqs: Record<string, number> = {};
    for (const [stream, seq] of Object.entries(readJson(this.seqPath) ?? {}))
      if (typeof seq === 'number') seqs[stream] = seq;
    this.seqs = seqs;
    const text = fs.existsSync(this.queuePath) ? fs.readFileSync(this.queuePath, 'utf8') : '';
    const stored = Number(fs.existsSync(this.storedPath) ? fs.readFileSync(this.storedPath, 'utf8') : 0) || 0;
    const events: LocalEvent[] = [];
    let readable = 0;
    let torn = false;
    for (const line of text.split('\n')) {
      if (!line.trim()) continue;
      const event = parseLine(line);
      if (!event) {
        this.warn(`event queue: skipping an unreadable line (torn write?): ${line.slice(0, 200)}`);
        torn = true;
        continue;
      }
      // A stored line may hold a stream's highest seq: the seq file is written only when the file is emptied.
      if (event.seq !== undefined && event.seq > (seqs[event.stream] ?? 0)) seqs[event.stream] = event.seq;
      if (readable++ >= stored) events.push(event);
    }
    this.linesInFile = events.length;
    this.bytesInFile = Buffer.byteLength(text);
    // Start from a clean file: an append after a torn last line would be glued to it and lost.
    if (stored > 0 || torn || (text.length > 0 && !text.endsWith('\n'))) this.rewrite(() => events, seqs);
    return { events, seqs };
  }

  append(event: LocalEvent): void {
    const line = `${JSON.stringify(event)}\n`;
    if (this.closed) {
      appendDurably(this.queuePath, line, this.warn);
      return;
    }
    this.pendingLines.push(line);
    if (this.writeScheduled) return;
    this.writeScheduled = true;
    this.enqueue(() => this.writeGroup());
  }

  markStored(count: number, seqs: Record<string, number>): void {
    this.storedLines += count;
    this.seqs = { ...seqs };
    if (this.closed || this.countScheduled) return;
    // One bookkeeping write for however many batches the store took meanwhile.
    this.countScheduled = true;
    this.enqueue(() => this.writeStoredCount());
  }

  /**
   * The count of stored lines needs no flush to disk: one that lags only makes the next start send those
   * events again, and the recorder recognises them in the store. Once every line is stored and the file
   * is past its bound, the file is emptied, the seq counters made durable first, since the file no longer
   * holds the highest seqs then.
   */
  private async writeStoredCount(): Promise<void> {
    this.countScheduled = false;
    const allStored = this.pendingLines.length === 0 && this.storedLines >= this.linesInFile;
    if (allStored && this.bytesInFile >= QUEUE_FILE_EMPTIED_PAST_BYTES) {
      await writeFileAtomically(this.seqPath, JSON.stringify(this.seqs));
      const handle = await this.currentHandle();
      await handle.truncate(0);
      this.linesInFile = 0;
      this.bytesInFile = 0;
      this.storedLines = 0;
    }
    const count = await this.currentStoredHandle();
    await count.write(String(this.storedLines).padStart(STORED_COUNT_WIDTH), 0);
  }

  rewrite(current: () => LocalEvent[], seqs: Record<string, number>): void {
    this.seqs = { ...seqs };
    // The seqs first: the lines the rewrite drops may hold the highest ones.
    try {
      writeFileSyncAtomically(this.seqPath, JSON.stringify(this.seqs));
    } catch (error) {
      this.warn(`event queue: could not write ${this.seqPath}: ${(error as Error).message}`);
    }
    // Synchronous: the queue's new shape must be what the file says before anything else is appended.
    this.rewriteNow(current());
  }

  whenWritten(): Promise<void> {
    return this.chain;
  }

  async close(): Promise<void> {
    await this.chain;
    this.closed = true;
    await this.handle?.close().catch(() => undefined);
    await this.storedHandle?.close().catch(() => undefined);
    this.handle = null;
    this.storedHandle = null;
  }

  private enqueue(operation: () => Promise<void>): void {
    this.chain = this.chain.then(operation).catch((error: Error) => this.warn(`event queue: ${error.message}`));
  }

  /** Writes every line gathered since the last group, then flushes them to disk together. */
  private async writeGroup(): Promise<void> {
    this.writeScheduled = false;
    const lines = this.pendingLines;
    this.pendingLines = [];
    if (lines.length === 0) return;
    const generation = this.generation;
    const handle = await this.currentHandle();
    const text = lines.join('');
    await handle.write(text);
    await handle.datasync();
    if (generation === this.generation) {
      this.linesInFile += lines.length;
      this.bytesInFile += Buffer.byteLength(text);
    }
  }

  private async currentHandle(): Promise<fs.promises.FileHandle> {
    if (this.handle && this.handleGeneration === this.generation) return this.handle;
    await this.handle?.close().catch(() => undefined);
    this.handle = await fs.promises.open(this.queuePath, 'a');
    this.handleGeneration = this.generation;
    return this.handle;
  }

  /** The stored count's file, replaced by a rewrite like the queue's. */
  private async currentStoredHandle(): Promise<fs.promises.FileHandle> {
    if (this.storedHandle && this.storedHandleGeneration === this.generation) return this.storedHandle;
    await this.storedHandle?.close().catch(() => undefined);
    this.storedHandle = await fs.promises.open(this.storedPath, fs.existsSync(this.storedPath) ? 'r+' : 'w');
    this.storedHandleGeneration = this.generation;
    return this.storedHandle;
  }

  private rewriteNow(events: LocalEvent[]): void {
    this.generation++;
    this.pendingLines = [];
    const text = events.map((event) => `${JSON.stringify(event)}\n`).join('');
    try {
      writeFileSyncAtomically(this.queuePath, text);
      writeFileSyncAtomically(this.storedPath, '0');
    } catch (error) {
      this.warn(`event queue: could not rewrite ${this.queuePath}: ${(error as Error).message}`);
    }
    this.linesInFile = events.length;
    this.bytesInFile = Buffer.byteLength(text);
    this.storedLines = 0;
  }
}

function parseLine(line: string): LocalEvent | null {
  try {
    const event = JSON.parse(line) as LocalEvent;
    return typeof event?.stream === 'string' && typeof event.type === 'string' ? event : null;
  } catch {
    return null;
  }
}

function readJson(file: string): Record<string, unknown> | null {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  } catch {
    return null;
  }
}

/** After close (an agent about to exit): nobody would wait for a background write. */
function appendDurably(file: string, line: string, warn: Log): void {
  try {
    writeDurablySync(file, 'a', line);
  } catch (error) {
    warn(`event queue: could not persist an event after close: ${(error as Error).message}`);
  }
}

/** Replaces `file` with `content`, on disk before the rename. */
async function writeFileAtomically(file: string, content: string): Promise<void> {
  // Not the synchronous writer's temporary name: a rewrite may run while this one awaits.
  const tmp = `${file}.tmp-async`;
  const handle = await fs.promises.open(tmp, 'w');
  try {
    await handle.write(content);
    await handle.datasync();
  } finally {
    await handle.close();
  }
  await fs.promises.rename(tmp, file);
}

function writeFileSyncAtomically(file: string, content: string): void {
  const tmp = `${file}.tmp`;
  writeDurablySync(tmp, 'w', content);
  fs.renameSync(tmp, file);
}

/** Writes (`w`) or appends (`a`) and returns once the data is on disk. */
function writeDurablySync(file: string, flags: 'a' | 'w', content: string): void {
  const fd = fs.openSync(file, flags);
  try {
    fs.writeSync(fd, content);
    fs.fdatasyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
