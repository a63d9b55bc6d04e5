import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createConfiguredLogger, LogSettings } from '../../src/common/logger';
import { compileLogFormat, strftime } from '../../src/common/log-format';
import { loadConfig } from '../../src/config/load-config';
import { stringify } from 'yaml';
import { removeDir, tmpDir } from '../helpers/tmp';

const record = {
  level: 'WARNING',
  levelNumber: 30,
  message: 'Loop time exceeded',
  time: new Date(2026, 10, 24, 9, 5, 7, 42),
};
const MINIMAL = {
  scope: 's',
  name: 'n',
  restapi: { listen: '127.0.0.1:8008' },
  etcd3: { hosts: ['127.0.0.1:2379'] },
  postgresql: { listen: '127.0.0.1:5432', data_dir: '/tmp/d' },
};
const settings = (overrides: Partial<LogSettings>): LogSettings => ({
  level: 'info',
  type: 'plain',
  format: '%(asctime)s %(levelname)s: %(message)s',
  file_num: 4,
  file_size: 25_000_000,
  ...overrides,
});

describe('log.format and log.dateformat, as Python logging renders them', () => {
  it.each([
    ['%(asctime)s %(levelname)s: %(message)s', undefined, '2026-11-24 09:05:07,042 WARNING: Loop time exceeded'],
    ['%(asctime)s %(levelname)-8s %(message)s', '%Y-%m-%dT%H:%M:%S', '2026-11-24T09:05:07 WARNING  Loop time exceeded'],
    ['[%(levelno)d] %(name)s %(message).4s %%', '%d %b %y %I%p', '[30] stator Loop %'],
  ])('%s with dateformat %s', (format, dateformat, line) => {
    const render = compileLogFormat(format, 'plain', dateformat);
    if ('problem' in render) throw new Error(render.problem);
    expect(render(record)).toBe(line);
  });

  it('writes one JSON object per line with the fields the format names (type: json)', () => {
    const render = compileLogFormat(['asctime', 'levelname', 'message'], 'json');
    if ('problem' in render) throw new Error(render.problem);
    expect(JSON.parse(render(record))).toEqual({
      asctime: '2026-11-24 09:05:07,042',
      levelname: 'WARNING',
      message: 'Loop time exceeded',
    });
  });

  it("keeps the columns of a format with Python's call-site fields, as Patroni's acceptance harness writes it", () => {
    const render = compileLogFormat(
      '%(asctime)s %(levelname)s [%(pathname)s:%(lineno)d - %(funcName)s]: %(message)s',
      'plain',
    );
    if ('problem' in render) throw new Error(render.problem);
    const line = render(record);
    expect(line).toBe('2026-11-24 09:05:07,042 WARNING [stator:0 - stator]: Loop time exceeded');
    expect(line.slice(24, 24 + 'WARNING'.length)).toBe('WARNING'); // where the harness reads the level
  });

  it('refuses what it cannot render, naming the field or the directive', () => {
    expect(compileLogFormat('%(stack_info)s %(message)s', 'plain')).toEqual({
      problem: expect.stringMatching(/^unknown field stack_info/),
    });
    expect(compileLogFormat('%(message)s', 'plain', '%Y %Q')).toEqual({ problem: 'dateformat: %Q is not supported' });
    expect(strftime('%j %A %B', record.time)).toBe('328 Tuesday November');
  });

  it('stops the agent at start on such a format, with one line naming the key', () => {
    const dir = tmpDir('stator-log-config-');
    const file = join(dir, 'stator.yml');
    writeFileSync(file, stringify({ ...MINIMAL, log: { format: '%(stack_info)s: %(message)s' } }));
    try {
      expect(() => loadConfig(file, {})).toThrow(/log\.format: unknown field stack_info/);
    } finally {
      removeDir(dir);
    }
  });
});

describe('log.dir', () => {
  let dir: string;
  beforeEach(() => (dir = tmpDir('stator-log-')));
  afterEach(() => removeDir(dir));

  it('writes to <dir>/stator.log and rotates as RotatingFileHandler, keeping file_num old files', () => {
    const logger = createConfiguredLogger(
      settings({ dir: join(dir, 'logs'), file_size: 200, file_num: 2 }),
      'stator.log',
    );
    for (let i = 0; i < 20; i++) logger.info(`line ${i} ${'x'.repeat(20)}`);
    const files = readdirSync(join(dir, 'logs')).sort();
    expect(files).toEqual(['stator.log', 'stator.log.1', 'stator.log.2']);
    const newest = readFileSync(join(dir, 'logs', 'stator.log'), 'utf8');
    expect(newest).toMatch(/INFO: line 19 x+\n$/);
    for (const file of files) expect(readFileSync(join(dir, 'logs', file)).length).toBeLessThanOrEqual(200);
  });

  it('keeps below the level out', () => {
    const logger = createConfiguredLogger(settings({ dir, level: 'warning' }), 'patroni.log');
    logger.info('not this');
    logger.warning('this');
    expect(readFileSync(join(dir, 'patroni.log'), 'utf8')).toMatch(/^\S+ \S+ WARNING: this\n$/);
  });
});
