import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMPONENT_LOGGERS, componentLogger, createConfiguredLogger, effectiveLevel, LogSettings } from '../../src/common/logger';
import { removeDir, tmpDir } from '../helpers/tmp';

/** `log.loggers` for Patroni's loggers: each Stator component logs at the level its Patroni logger name resolves to. */
describe('log.loggers levels per component', () => {
  let dir: string;
  beforeEach(() => (dir = tmpDir('stator-loggers-')));
  afterEach(() => removeDir(dir));

  const linesWritten = (loggers: LogSettings['loggers'], level: LogSettings['level'] = 'info') => {
    const root = createConfiguredLogger({ level, type: 'plain', format: '%(levelname)s %(message)s', file_num: 1, file_size: 1_000_000, dir, loggers }, 'stator.log');
    for (const [component, name] of Object.entries(COMPONENT_LOGGERS)) {
      const logger = componentLogger(root, name);
      logger.debug(`${component} debug`);
      logger.info(`${component} info`);
      logger.warning(`${component} warning`);
    }
    root.debug('root debug');
    root.info('root info');
    return readFileSync(join(dir, 'stator.log'), 'utf8').trim().split('\n');
  };

  it('without entries every component logs at log.level', () => {
    expect(linesWritten(undefined)).toEqual([
      'INFO cycle info', 'WARNING cycle warning', 'INFO ha info', 'WARNING ha warning', 'INFO dcs info', 'WARNING dcs warning',
      'INFO api info', 'WARNING api warning', 'INFO postgresql info', 'WARNING postgresql warning', 'INFO callbacks info', 'WARNING callbacks warning',
      'INFO root info',
    ]);
  });

  it("an entry sets its component's level, an ancestor's covers its children, as Python resolves them", () => {
    const lines = linesWritten({ 'patroni.postgresql.callback_executor': 'debug', 'patroni.dcs': 'warning', 'patroni.__main__': 'warning' });
    expect(lines).toEqual([
      'WARNING cycle warning', 'INFO ha info', 'WARNING ha warning', 'WARNING dcs warning',
      'INFO api info', 'WARNING api warning', 'INFO postgresql info', 'WARNING postgresql warning', 'DEBUG callbacks debug', 'INFO callbacks info', 'WARNING callbacks warning',
      'INFO root info',
    ]);
  });

  it('a `patroni` entry is the level of every line no other entry covers, the root logger included', () => {
    const lines = linesWritten({ patroni: 'warning', 'patroni.ha': 'debug' }, 'info');
    expect(lines).toEqual(['WARNING cycle warning', 'DEBUG ha debug', 'INFO ha info', 'WARNING ha warning', 'WARNING dcs warning', 'WARNING api warning', 'WARNING postgresql warning', 'WARNING callbacks warning']);
  });

  it.each([
    ['patroni.dcs.etcd3', { 'patroni.dcs': 'W' }, 'W'],
    ['patroni.dcs.etcd3', { 'patroni.dcs.etcd3': 'D', 'patroni.dcs': 'W' }, 'D'],
    ['patroni.ha', { 'patroni.hax': 'W' }, 'root'],
    ['patroni.ha', { patroni: 'E' }, 'E'],
  ])('effectiveLevel(%s, %j) is %s', (name, levels, expected) => {
    expect(effectiveLevel<string>(name, levels as Record<string, string>, 'root')).toBe(expected);
  });
});
