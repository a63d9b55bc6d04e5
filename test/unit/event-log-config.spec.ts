import { stringify } from 'yaml';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load-config';
import { DEFAULT_EVENT_LOG } from '../../src/config/event-log-config';
import { removeDir, tmpDir } from '../helpers/tmp';
import { problemsIfAny } from '../helpers/config-problems';

const dirs: string[] = [];
afterAll(() => dirs.forEach(removeDir));

function load(extra: Record<string, unknown>, env: NodeJS.ProcessEnv = {}) {
  const dir = tmpDir('stator-event-log-config-');
  dirs.push(dir);
  const path = join(dir, 'stator.yml');
  const base = {
    scope: 'demo',
    name: 'node1',
    restapi: { listen: '127.0.0.1:8008' },
    etcd3: { hosts: ['127.0.0.1:2379'] },
    postgresql: { data_dir: '/tmp/data', listen: '127.0.0.1:5432' },
  };
  writeFileSync(path, stringify({ ...base, ...extra }));
  return loadConfig(path, env);
}

describe('the event_log section', () => {
  it('defaults to 30 days, 100,000 events per stream and 8 MiB of a 2 GiB etcd quota, with appends paused past half of it', () => {
    expect(load({}).config.event_log).toEqual({
      max_age: 2_592_000,
      max_events_per_stream: 100_000,
      max_bytes: 8_388_608,
      etcd_quota_bytes: 2_147_483_648,
      etcd_quota_share: 0.5,
    });
    expect(DEFAULT_EVENT_LOG.max_bytes * 100).toBeLessThan(
      DEFAULT_EVENT_LOG.etcd_quota_bytes * DEFAULT_EVENT_LOG.etcd_quota_share,
    );
  });

  it('reads every key, also from STATOR_EVENT_LOG_* variables', () => {
    expect(
      load({ event_log: { max_age: 86400, max_bytes: 2_097_152, etcd_quota_share: 0.3 } }).config.event_log,
    ).toMatchObject({ max_age: 86400, max_bytes: 2_097_152, etcd_quota_share: 0.3 });
    expect(
      load(
        {},
        {
          STATOR_EVENT_LOG_MAX_EVENTS_PER_STREAM: '5000',
          STATOR_EVENT_LOG_ETCD_QUOTA_BYTES: '8589934592',
          STATOR_EVENT_LOG_ETCD_QUOTA_SHARE: '0.25',
        },
      ).config.event_log,
    ).toMatchObject({
      max_events_per_stream: 5000,
      etcd_quota_bytes: 8_589_934_592,
      etcd_quota_share: 0.25,
    });
  });

  it.each<[Record<string, unknown>, string]>([
    [{ max_age: 60 }, 'event_log.max_age: must be an integer from 3600 to 31622400, got 60'],
    [{ max_bytes: '8MB' }, 'event_log.max_bytes: must be an integer from 1048576 to 1073741824, got "8MB"'],
    [
      { etcd_quota_bytes: 1e12 },
      'event_log.etcd_quota_bytes: must be an integer from 16777216 to 8589934592, got 1000000000000',
    ],
    [{ etcd_quota_share: 1 }, 'event_log.etcd_quota_share: must be a fraction from 0.05 to 0.9, got 1'],
    [{ max_events_per_stream: -5 }, 'event_log.max_events_per_stream: must be an integer from 100 to 10000000, got -5'],
  ])('refuses %j, naming the key and the rule', (section, problem) => {
    expect(problemsIfAny(() => load({ event_log: section }))).toEqual([problem]);
  });
});
