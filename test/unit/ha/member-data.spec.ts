import { loadConfig } from '../../../src/config/load-config';
import { memberData, MemberFacts } from '../../../src/ha/member-data';
import { sample } from './snapshot-factory';

/** The member key as the other members' leader race reads it. */
describe('memberData', () => {
  const { config } = loadConfig(null, {
    PATRONI_SCOPE: 'demo',
    PATRONI_NAME: 'n1',
    PATRONI_ETCD3_HOSTS: '127.0.0.1:2379',
    PATRONI_RESTAPI_LISTEN: '127.0.0.1:8008',
    PATRONI_RESTAPI_CONNECT_ADDRESS: '127.0.0.1:8008',
    PATRONI_POSTGRESQL_DATA_DIR: '/tmp/data',
    PATRONI_POSTGRESQL_LISTEN: '127.0.0.1:5432',
    PATRONI_POSTGRESQL_CONNECT_ADDRESS: '127.0.0.1:5432',
  });
  const facts = (overrides: Partial<MemberFacts>): MemberFacts => ({
    config,
    version: '0.1.0',
    pgState: 'running',
    role: 'replica',
    sample: sample(),
    tags: {},
    checkpointAfterPromotePending: false,
    scheduledRestart: null,
    paused: false,
    shutdownCheckpoint: null,
    ...overrides,
  });

  it('a running server shows its WAL position and timeline', () => {
    expect(memberData(facts({}))).toMatchObject({ state: 'running', xlog_location: 50_000_000, timeline: 1 });
  });

  it('a stopped server shows no WAL position', () => {
    const data = memberData(facts({ pgState: 'stopped', sample: null }));
    expect(data.xlog_location).toBeUndefined();
    expect(data.timeline).toBeUndefined();
  });

  it('a primary stopped cleanly shows a position just past the start of its shutdown checkpoint', () => {
    const data = memberData(facts({ pgState: 'stopped', role: 'primary', sample: null, shutdownCheckpoint: { lsn: 83_886_120, timeline: 3 } }));
    expect(data).toMatchObject({ state: 'stopped', xlog_location: 83_886_121, timeline: 3 });
  });
});
