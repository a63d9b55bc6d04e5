import { execFileSync } from 'node:child_process';
import { closeSync, constants as fsConstants, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { createConfiguredLogger, LogSettings } from '../../src/common/logger';
import { LogQueue } from '../../src/common/log-queue';
import { removeDir, tmpDir } from '../helpers/tmp';
import { waitFor } from '../helpers/wait-for';

/**
 * The `log` keys as a reader of the log sees them: static fields in every JSON line, heartbeat lines written once
 * while they repeat, stack traces where traceback_level says, and a stalled output that costs lines, counted, rather
 * than stalling the agent.
 */

let dir: string;
let files = 0;
beforeAll(() => {
  dir = tmpDir('stator-log-options-');
});
afterAll(() => removeDir(dir));

const settings = (overrides: Partial<LogSettings>): LogSettings => ({
  level: 'info',
  type: 'plain',
  format: '%(levelname)s: %(message)s',
  file_num: 4,
  file_size: 25_000_000,
  ...overrides,
});

/** A logger writing to a file of its own, and that file's lines. */
function fileLogger(overrides: Partial<LogSettings>) {
  const logDir = join(dir, `logs-${++files}`);
  const logger = createConfiguredLogger(settings({ dir: logDir, ...overrides }), 'stator.log');
  const lines = () => readFileSync(join(logDir, 'stator.log'), 'utf8').split('\n').filter(Boolean);
  return { logger, lines };
}

describe('log.static_fields', () => {
  it('adds the fields to every JSON line, after the format fields', () => {
    const { logger, lines } = fileLogger({
      type: 'json',
      format: ['levelname', 'message'],
      static_fields: { app: 'patroni', shard: 3, primary: true },
    });
    logger.info('no action. I am (n1), the leader with the lock');
    logger.warning('Loop time exceeded');

    expect(lines().map((line) => JSON.parse(line) as unknown)).toEqual([
      {
        levelname: 'INFO',
        message: 'no action. I am (n1), the leader with the lock',
        app: 'patroni',
        shard: 3,
        primary: true,
      },
      { levelname: 'WARNING', message: 'Loop time exceeded', app: 'patroni', shard: 3, primary: true },
    ]);
    expect(Object.keys(JSON.parse(lines()[0]) as object)).toEqual(['levelname', 'message', 'app', 'shard', 'primary']);
  });
});

describe('log.deduplicate_heartbeat_logs', () => {
  const LEADER = 'no action. I am (n1), the leader with the lock';
  const FOLLOWER = 'no action. I am (n1), a secondary, and following a leader (n2)';

  it('writes a repeated heartbeat once, and again after it changes or another line comes between', () => {
    const { logger, lines } = fileLogger({ deduplicate_heartbeat_logs: true });
    for (const message of [
      LEADER,
      LEADER,
      LEADER,
      FOLLOWER,
      FOLLOWER,
      'PAUSE: no action. I am (n1)',
      'PAUSE: no action. I am (n1)',
      FOLLOWER,
    ]) {
      logger.info(message);
    }
    logger.warning('Loop time exceeded');
    logger.info(FOLLOWER);
    logger.info(FOLLOWER);

    expect(lines()).toEqual([
      `INFO: ${LEADER}`,
      `INFO: ${FOLLOWER}`,
      'INFO: PAUSE: no action. I am (n1)',
      `INFO: ${FOLLOWER}`,
      'WARNING: Loop time exceeded',
      `INFO: ${FOLLOWER}`,
    ]);
  });

  it('writes every heartbeat without the setting, and at level debug (as Patroni, which deduplicates only at INFO)', () => {
    const plain = fileLogger({});
    const debug = fileLogger({ level: 'debug', deduplicate_heartbeat_logs: true });
    for (const { logger } of [plain, debug]) for (let i = 0; i < 3; i += 1) logger.info(LEADER);

    expect(plain.lines()).toHaveLength(3);
    expect(debug.lines()).toHaveLength(3);
  });
});

describe('log.traceback_level', () => {
  const failure = () => {
    const error = new Error('connection refused');
    error.stack = 'Error: connection refused\n    at probe (peer.ts:1:1)';
    return error;
  };

  it('error (the default): the stack trace follows an ERROR line', () => {
    const { logger, lines } = fileLogger({});
    logger.exception?.('GET /cluster failed', failure());

    expect(lines()).toEqual(['ERROR: GET /cluster failed', 'Error: connection refused', '    at probe (peer.ts:1:1)']);
  });

  it('debug: one ERROR line with the message at level info, the stack trace as DEBUG at level debug', () => {
    const quiet = fileLogger({ traceback_level: 'debug' });
    const verbose = fileLogger({ traceback_level: 'debug', level: 'debug' });
    quiet.logger.exception?.('GET /cluster failed', failure());
    verbose.logger.exception?.('GET /cluster failed', failure());

    expect(quiet.lines()).toEqual(["ERROR: GET /cluster failed, DETAIL: 'connection refused'"]);
    expect(verbose.lines()).toEqual([
      'DEBUG: GET /cluster failed',
      'Error: connection refused',
      '    at probe (peer.ts:1:1)',
    ]);
  });
});

describe('log.max_queue_size: standard output that stops taking lines', () => {
  it('keeps the agent running, drops the lines past the bound, and says how many once the output takes lines again', async () => {
    // A real pipe (a FIFO) whose reader stops reading: its 64 KiB fill up and writes to it block.
    const fifo = join(dir, 'stdout.fifo');
    execFileSync('mkfifo', [fifo]);
    const reader = openSync(fifo, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
    const writer = openSync(fifo, 'w');
    const queue = new LogQueue(writer, 100, (count) => `WARNING: lost ${count} log lines\n`);
    const line = (i: number) => `INFO: line ${String(i).padStart(5, '0')} ${'x'.repeat(180)}\n`;

    // 2000 lines of ~200 bytes are six times what the pipe holds. Written in steps with the event loop running between
    // them, so that the writes fill the pipe: written synchronously, this loop would hang on the full pipe.
    for (let i = 0; i < 2000; i += 1) {
      queue.write(line(i));
      if (i % 50 === 49) await new Promise((resolve) => setTimeout(resolve, 1));
    }

    let text = '';
    const buffer = Buffer.alloc(65536);
    const drain = () => {
      for (;;) {
        try {
          const read = readSync(reader, buffer, 0, buffer.length, null);
          if (read <= 0) return;
          text += buffer.subarray(0, read).toString();
        } catch {
          return; // EAGAIN: nothing more for now
        }
      }
    };
    try {
      // The reader comes back: the waiting lines arrive, then the count of those lost, then a line logged now.
      await waitFor(
        () => {
          drain();
          return /lost \d+ log lines/.test(text) && queue.waitingLines === 0;
        },
        { timeoutMs: 4_000, description: 'the count of lost lines, and nothing left waiting' },
      );
      queue.write('INFO: the reader is back\n');
      await waitFor(
        () => {
          drain();
          return text.includes('INFO: the reader is back');
        },
        { timeoutMs: 4_000, description: 'the line logged once the reader is back' },
      );
    } finally {
      closeSync(writer);
      closeSync(reader);
    }

    const lines = text.split('\n').filter(Boolean);
    // A write the pipe finishes while lines are still being dropped announces those so far: the counts add up.
    const counts = [...text.matchAll(/^WARNING: lost (\d+) log lines$/gm)].map((match) => Number(match[1]));
    const lost = counts.reduce((sum, count) => sum + count, 0);
    expect(lines.at(-1)).toBe('INFO: the reader is back');
    // Every line either arrived once, in order, or was counted as lost.
    const arrived = lines.filter((l) => l.startsWith('INFO: line '));
    expect(arrived.length + lost).toBe(2000);
    expect(arrived.length).toBeGreaterThanOrEqual(300); // what the pipe held, and the 100 waiting
    expect(arrived).toEqual([...arrived].sort());
    expect(new Set(arrived).size).toBe(arrived.length);
    expect(lost).toBeGreaterThan(0);
  });

  it('writes a CRITICAL line at once, with the lines waiting behind the write in flight, so that an exit right after it loses none', async () => {
    const fifo = join(dir, 'critical.fifo');
    execFileSync('mkfifo', [fifo]);
    const reader = openSync(fifo, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
    const writer = openSync(fifo, 'w');
    const queue = new LogQueue(writer, 100, (count) => `WARNING: lost ${count} log lines\n`);
    const buffer = Buffer.alloc(65536);
    let text = '';
    const drain = () => {
      try {
        const read = readSync(reader, buffer, 0, buffer.length, null);
        text += buffer.subarray(0, Math.max(0, read)).toString();
      } catch {
        // EAGAIN: nothing more for now
      }
    };
    try {
      queue.write('INFO: one\n'); // handed to the threadpool
      queue.write('INFO: two\n');
      queue.write('INFO: three\n');
      queue.writeNow('CRITICAL: the end\n');
      drain(); // no turn of the event loop since: what a process.exit() here would leave behind
      expect(text).toContain('INFO: two\nINFO: three\nCRITICAL: the end\n');
      await waitFor(
        () => {
          drain();
          return text.includes('INFO: one') && queue.waitingLines === 0;
        },
        { timeoutMs: 4_000, description: 'the line that was in flight' },
      );
    } finally {
      closeSync(writer);
      closeSync(reader);
    }
    expect(text.split('\n').filter(Boolean).sort()).toEqual([
      'CRITICAL: the end',
      'INFO: one',
      'INFO: three',
      'INFO: two',
    ]);
  });
});
