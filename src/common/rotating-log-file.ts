import { closeSync, fstatSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';

/**
 * A log file rotated as Python's RotatingFileHandler (what Patroni's `log.dir` uses): before a line
 * would take the file past `maxBytes`, `name.{n-1}` becomes `name.{n}` ... `name` becomes
 * `name.1`, keeping `backups` old files, and writing goes on in a new `name`. Lines are written
 * synchronously, so none is lost when the agent exits.
 */
export class RotatingLogFile {
  private fd: number;
  private size: number;

  constructor(
    private readonly path: string,
    private readonly maxBytes: number,
    private readonly backups: number,
    private readonly mode: number = 0o600,
  ) {
    this.fd = openSync(path, 'a', mode);
    this.size = fstatSync(this.fd).size;
  }

  write(line: string): void {
    const bytes = Buffer.byteLength(line);
    if (this.maxBytes > 0 && this.size > 0 && this.size + bytes > this.maxBytes) this.rotate();
    writeSync(this.fd, line);
    this.size += bytes;
  }

  close(): void {
    closeSync(this.fd);
  }

  private rotate(): void {
    closeSync(this.fd);
    if (this.backups > 0) {
      rmSync(`${this.path}.${this.backups}`, { force: true });
      for (let index = this.backups - 1; index >= 1; index--) {
        try {
          renameSync(`${this.path}.${index}`, `${this.path}.${index + 1}`);
        } catch {
          // that backup does not exist yet
        }
      }
      renameSync(this.path, `${this.path}.1`);
    } else {
      rmSync(this.path, { force: true });
    }
    this.fd = openSync(this.path, 'a', this.mode);
    this.size = 0;
  }
}
