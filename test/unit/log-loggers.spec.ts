import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  COMPONENT_LOGGERS,
  componentLogger,
  createConfiguredLogger,
  effectiveLevel,
  LogSettings,
} from '../../src/common/logger';
import { PATRONI_MODULE_SOURCES, sourceOfPatroniLogger } from '../../src/common/logger-sources';
import { removeDir, tmpDir } from '../helpers/tmp';

/** `log.loggers` for Patroni's loggers: each Stator component logs at the level its Patroni logger name resolves to. */
describe('log.loggers levels per component', () => {
  let dir: string;
  beforeEach(() => (dir = tmpDir('stator-loggers-')));
  afterEach(() => removeDir(dir));

  let files = 0;
  const linesWritten = (loggers: LogSettings['loggers'], level: LogSettings['level'] = 'info') => {
    const file = `stator-${++files}.log`;
    const root = createConfiguredLogger(
      { level, type: 'plain', format: '%(levelname)s %(message)s', file_num: 1, file_size: 1_000_000, dir, loggers },
      file,
    );
    for (const [component, name] of Object.entries(COMPONENT_LOGGERS)) {
      const logger = componentLogger(root, name);
      logger.debug(`${component} debug`);
      logger.info(`${component} info`);
      logger.warning(`${component} warning`);
    }
    root.debug('root debug');
    root.info('root info');
    return readFileSync(join(dir, file), 'utf8').trim().split('\n');
  };

  it('without entries every component logs at log.level', () => {
    expect(linesWritten(undefined)).toEqual([
      'INFO cycle info',
      'WARNING cycle warning',
      'INFO ha info',
      'WARNING ha warning',
      'INFO dcs info',
      'WARNING dcs warning',
      'INFO api info',
      'WARNING api warning',
      'INFO postgresql info',
      'WARNING postgresql warning',
      'INFO callbacks info',
      'WARNING callbacks warning',
      'INFO root info',
    ]);
  });

  it("an entry sets its component's level, an ancestor's covers its children, as Python resolves them", () => {
    const lines = linesWritten({
      'patroni.postgresql.callback_executor': 'debug',
      'patroni.dcs': 'warning',
      'patroni.__main__': 'warning',
    });
    expect(lines).toEqual([
      'WARNING cycle warning',
      'INFO ha info',
      'WARNING ha warning',
      'WARNING dcs warning',
      'INFO api info',
      'WARNING api warning',
      'INFO postgresql info',
      'WARNING postgresql warning',
      'DEBUG callbacks debug',
      'INFO callbacks info',
      'WARNING callbacks warning',
      'INFO root info',
    ]);
  });

  it('a `patroni` entry is the level of every line no other entry covers, the root logger included', () => {
    const lines = linesWritten({ patroni: 'warning', 'patroni.ha': 'debug' }, 'info');
    expect(lines).toEqual([
      'WARNING cycle warning',
      'DEBUG ha debug',
      'INFO ha info',
      'WARNING ha warning',
      'WARNING dcs warning',
      'WARNING api warning',
      'WARNING postgresql warning',
      'WARNING callbacks warning',
    ]);
  });

  it.each([
    ['patroni.dcs.etcd3', { 'patroni.dcs': 'W' }, 'W'],
    ['patroni.dcs.etcd3', { 'patroni.dcs.etcd3': 'D', 'patroni.dcs': 'W' }, 'D'],
    ['patroni.ha', { 'patroni.hax': 'W' }, 'root'],
    ['patroni.ha', { patroni: 'E' }, 'E'],
  ])('effectiveLevel(%s, %j) is %s', (name, levels, expected) => {
    expect(effectiveLevel<string>(name, levels as Record<string, string>, 'root')).toBe(expected);
  });

  it("a level for another of Patroni's modules applies to the Stator source nearest to it: patroni.postgresql.slots to the HA loop's slot lines", () => {
    expect(
      linesWritten({ 'patroni.postgresql.slots': 'debug', 'patroni.watchdog': 'warning' }, 'info').filter((line) =>
        line.includes(' ha '),
      ),
    ).toEqual(['DEBUG ha debug', 'INFO ha info', 'WARNING ha warning']);
    expect(linesWritten({ 'patroni.postgresql.connection': 'warning' })).not.toContain('INFO postgresql info');
  });

  it("the source's own entry is more specific than a module mapped to it; an unknown patroni.* name goes by its nearest parent", () => {
    expect(
      linesWritten({ 'patroni.ha': 'warning', 'patroni.postgresql.slots': 'debug' }).filter((line) =>
        line.includes(' ha '),
      ),
    ).toEqual(['WARNING ha warning']);
    expect(linesWritten({ 'patroni.dcs.etcd3.client': 'warning' }).filter((line) => line.includes(' dcs '))).toEqual([
      'WARNING dcs warning',
    ]);
    // Python gives a level for patroni.whatever to that logger alone: nothing in Stator logs there.
    expect(linesWritten({ 'patroni.whatever': 'error' })).toContain('INFO root info');
  });

  it("maps every module of Patroni's package to a Stator source, or says nothing in the agent logs there", () => {
    const modules = [
      '__main__',
      'api',
      'async_executor',
      'collections',
      'config',
      'config_generator',
      'ctl',
      'daemon',
      'dcs',
      'dcs.consul',
      'dcs.etcd',
      'dcs.etcd3',
      'dcs.exhibitor',
      'dcs.kubernetes',
      'dcs.raft',
      'dcs.zookeeper',
      'dynamic_loader',
      'exceptions',
      'file_perm',
      'global_config',
      'ha',
      'log',
      'postgresql',
      'postgresql.available_parameters',
      'postgresql.bootstrap',
      'postgresql.callback_executor',
      'postgresql.cancellable',
      'postgresql.config',
      'postgresql.connection',
      'postgresql.misc',
      'postgresql.mpp',
      'postgresql.mpp.citus',
      'postgresql.postmaster',
      'postgresql.rewind',
      'postgresql.slots',
      'postgresql.sync',
      'postgresql.validator',
      'psycopg',
      'quorum',
      'raft_controller',
      'request',
      'scripts',
      'scripts.aws',
      'scripts.barman',
      'scripts.wale_restore',
      'tags',
      'thread_pool',
      'utils',
      'validator',
      'version',
      'watchdog',
      'watchdog.base',
      'watchdog.linux',
    ];
    for (const module of modules) expect(Object.hasOwn(PATRONI_MODULE_SOURCES, `patroni.${module}`)).toBe(true);
    expect(
      Object.fromEntries(
        [
          'patroni.postgresql.slots',
          'patroni.postgresql.rewind',
          'patroni.watchdog.linux',
          'patroni.dcs.consul',
          'patroni.postgresql.config',
          'patroni.ctl',
          'patroni.ha',
          'patroni.dcs',
        ].map((name) => [name, sourceOfPatroniLogger(name)]),
      ),
    ).toEqual({
      'patroni.postgresql.slots': 'patroni.ha',
      'patroni.postgresql.rewind': 'patroni.ha',
      'patroni.watchdog.linux': 'patroni.ha',
      'patroni.dcs.consul': 'patroni.dcs.etcd3',
      'patroni.postgresql.config': 'patroni.postgresql.postmaster',
      'patroni.ctl': null,
      // A source's own name, or an ancestor of one: resolved as Python does, no mapping needed.
      'patroni.ha': undefined,
      'patroni.dcs': undefined,
    });
  });
});
