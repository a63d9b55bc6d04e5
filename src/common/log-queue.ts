import { write as writeFd, writeSync } from 'node:fs';
import { Backoff } from './backoff';

/** Patroni's `log.max_queue_size` default: lines waiting to be written before new ones are dropped. */
export const DEFAULT_MAX_QUEUE_SIZE = 1000;

/** Longest wait before trying again when the descriptor would block (non-blocking pipe) or failed. */
const MAX_RETRY_DELAY_MS = 1_000;

/**
 * Log lines on their way to a file descriptor (standard output) without ever blocking the agent: lines wait here and
 * one write at a time, off the event loop, hands them to the kernel. A reader that stops reading (a stuck journald, a
 * paused `docker logs`) fills the pipe; the write then waits, not the HA loop. Once `maxLines` wait, a new line is
 * dropped and counted; when the output takes lines again, the count follows the lines that waited as a warning line,
 * as Patroni's QueueHandler reports its lost records. At exit, the lines still waiting are written synchronously, so a last critical line is not lost.
 */
export class LogQueue {
  private readonly waiting: Buffer[] = [];
  private writing = false;
  /** Lines of `waiting` in the write the kernel has now. */
  private inFlight = 0;
  private lost = 0;
  private readonly retryDelay = new Backoff(10, MAX_RETRY_DELAY_MS);

  /** `lostLine(count)`: the rendered warning line (with its newline) announcing `count` dropped lines. */
  constructor(
    private readonly fd: number,
    private readonly maxLines: number,
    private readonly lostLine: (count: number) => string,
  ) {
    if (LIVE_QUEUES.size === 0) process.once('exit', flushAllAtExit);
    LIVE_QUEUES.add(this);
  }

  write(line: string): void {
    if (this.waiting.length >= this.maxLines) {
      this.lost += 1;
      return;
    }
    this.waiting.push(Buffer.from(line));
    this.writeNext();
  }

  /**
   * A line that must not wait behind the event loop (CRITICAL, usually followed by an exit): it and the lines waiting
   * behind the write in flight are written now. A line handed to the threadpool at exit may never reach the kernel,
   * and `flushSync` cannot tell, so a last line must never be left there.
   */
  writeNow(line: string): void {
    const rest = Buffer.concat([...this.waiting.splice(this.inFlight), Buffer.from(line)]);
    let written = 0;
    try {
      written = writeSync(this.fd, rest);
    } catch {
      // The output would block (a full non-blocking pipe) or failed: the rest waits its turn like any line.
    }
    if (written < rest.length) {
      this.waiting.push(rest.subarray(written));
      this.writeNext();
    }
  }

  /** Lines not yet written, the one being written included. */
  get waitingLines(): number {
    return this.waiting.length;
  }

  private writeNext(): void {
    if (this.writing || this.waiting.length === 0) return;
    this.writing = true;
    const batch = Buffer.concat(this.waiting);
    const count = this.waiting.length;
    this.inFlight = count;
    writeFd(this.fd, batch, (error, written) => {
      if (error) {
        // EAGAIN from a non-blocking pipe, or a failing output: wait, doubling the wait up to a second, and try again.
        setTimeout(() => this.retry(), this.retryDelay.next()).unref();
        return;
      }
      this.retryDelay.reset();
      this.consume(batch, count, written);
      this.inFlight = 0;
      this.writing = false;
      this.writeNext();
    });
  }

  private retry(): void {
    this.inFlight = 0;
    this.writing = false;
    this.writeNext();
  }

  /** Removes what was written; a partly written line stays first with only its rest. */
  private consume(batch: Buffer, count: number, written: number): void {
    if (written >= batch.length) {
      this.waiting.splice(0, count);
      if (this.lost > 0) {
        // Lines are dropped only while the queue is full, so the gap is after everything waiting now: announced there.
        this.waiting.push(Buffer.from(this.lostLine(this.lost)));
        this.lost = 0;
      }
      return;
    }
    this.waiting.splice(0, count, batch.subarray(written));
  }

  /** At exit: the lines no write has taken yet, after the one in flight (which the kernel finishes or not). */
  flushSync(): void {
    const rest = this.waiting.slice(this.inFlight);
    if (this.lost > 0) rest.push(Buffer.from(this.lostLine(this.lost)));
    this.waiting.length = 0;
    this.lost = 0;
    if (rest.length === 0) return;
    try {
      writeSync(this.fd, Buffer.concat(rest));
    } catch {
      // The output is gone at exit: nothing left to tell.
    }
  }
}

const LIVE_QUEUES = new Set<LogQueue>();

function flushAllAtExit(): void {
  for (const queue of LIVE_QUEUES) queue.flushSync();
}
