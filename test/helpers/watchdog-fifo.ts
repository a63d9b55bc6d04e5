import { execFileSync } from 'node:child_process';
import { closeSync, constants, createReadStream, openSync, ReadStream, rmSync } from 'node:fs';

/** What the watchdog FIFO received, in order (Patroni's acceptance-harness protocol). */
export type WatchdogRecord =
  | { at: number; kind: 'timeout'; seconds: number }
  | { at: number; kind: 'ping' }
  | { at: number; kind: 'magic_close' }
  /** The writer closed the FIFO (after a magic close, or without one: a writer that died). */
  | { at: number; kind: 'closed' };

/**
 * A stand-in for /dev/watchdog that the `testing` driver writes to, as Patroni's `WatchdogMonitor` reads it:
 * `Ctimeout=<s>\n` for WDIOC_SETTIMEOUT, '1' for a keepalive, 'V' for the magic close. It reopens after each
 * writer leaves, so a node that leads again is seen too. Tests never open a real watchdog device.
 */
export class WatchdogFifo {
  readonly records: WatchdogRecord[] = [];
  private stream: ReadStream | null = null;
  private stopped = false;
  private pending = '';
  /** A reader that never reads: a writer's non-blocking open always finds one, even while the stream reopens. */
  private readonly standingReader: number;

  constructor(readonly path: string) {
    execFileSync('mkfifo', ['-m', '0600', path]);
    this.standingReader = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    this.listen();
  }

  private listen(): void {
    if (this.stopped) return;
    // A read open blocks (in libuv's pool) until a writer comes; what a writer wrote meanwhile waits in the pipe.
    const stream = createReadStream(this.path, { encoding: 'latin1' });
    this.stream = stream;
    stream.on('data', (chunk) => this.read(String(chunk)));
    stream.on('end', () => {
      this.records.push({ at: Date.now(), kind: 'closed' });
      this.listen();
    });
    stream.on('error', () => undefined);
  }

  private read(text: string): void {
    this.pending += text;
    while (this.pending) {
      const first = this.pending[0];
      if (first === 'C') {
        const newline = this.pending.indexOf('\n');
        if (newline < 0) return;
        const command = this.pending.slice(1, newline);
        this.pending = this.pending.slice(newline + 1);
        const match = /^timeout=(\d+)$/.exec(command);
        if (match) this.records.push({ at: Date.now(), kind: 'timeout', seconds: Number(match[1]) });
        continue;
      }
      this.pending = this.pending.slice(1);
      if (first === '1') this.records.push({ at: Date.now(), kind: 'ping' });
      else if (first === 'V') this.records.push({ at: Date.now(), kind: 'magic_close' });
    }
  }

  count(kind: WatchdogRecord['kind'], since = 0): number {
    return this.records.filter((record) => record.kind === kind && record.at >= since).length;
  }

  lastTimeout(): number | null {
    const timeouts = this.records.filter((record) => record.kind === 'timeout');
    return timeouts.length > 0 ? (timeouts[timeouts.length - 1] as { seconds: number }).seconds : null;
  }

  /** Stops reading; a blocked open is released by opening the FIFO for writing once. */
  close(): void {
    this.stopped = true;
    this.stream?.destroy();
    try {
      execFileSync('sh', ['-c', 'exec 3>"$1"; exec 3>&-', 'sh', this.path], { timeout: 2000 });
    } catch {
      // nobody was waiting
    }
    closeSync(this.standingReader);
    rmSync(this.path, { force: true });
  }
}
