import { loadConfig } from '../../../src/config/load-config';
import { memberData, MemberFacts } from '../../../src/ha/member-data';
import { shutdownCheckpoint, ShutdownFacts } from '../../../src/ha/node-member-key';
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
    const data = memberData(
      facts({
        pgState: 'stopped',
        role: 'primary',
        sample: null,
        shutdownCheckpoint: { lsn: 83_886_120, timeline: 3 },
      }),
    );
    expect(data).toMatchObject({ state: 'stopped', xlog_location: 83_886_121, timeline: 3 });
  });

  it('a server that started but was not read yet still shows the shutdown checkpoint, not an empty position', () => {
    // The key is touched at the end of the cycle that started the server; its first reading comes a cycle later.
    const data = memberData(
      facts({ pgState: 'running', sample: null, shutdownCheckpoint: { lsn: 83_886_120, timeline: 3 } }),
    );
    expect(data).toMatchObject({ state: 'running', xlog_location: 83_886_121, timeline: 3 });
  });

  describe('version, as Patroni peers read it', () => {
    // patroni/dcs/__init__.py (3.0.2): Member.version parses "a.b.c" into a tuple; Leader.checkpoint_after_promote
    // is None (the peer runs a CHECKPOINT on the leader itself before pg_rewind) unless version > (1, 5, 6), and
    // Cluster.min_version < (2, 1, 0) makes a Patroni leader keep writing the legacy /optime/leader key.
    const asPatroniTuple = (version: string) => version.split('.').map(Number);
    const compare = (a: number[], b: number[]) => {
      for (let i = 0; i < Math.max(a.length, b.length); i++)
        if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) - (b[i] ?? 0);
      return 0;
    };

    it("in compat mode is the reference release, past both of the peers' thresholds; Stator's own is stator_version", () => {
      const data = memberData(facts({ config: { ...config, compat: 'patroni' }, version: '0.1.0' }));
      expect(data.version).toBe('4.1.4');
      expect(data.stator_version).toBe('0.1.0');
      const parsed = asPatroniTuple(data.version);
      expect(parsed.every(Number.isInteger)).toBe(true);
      expect(compare(parsed, [1, 5, 6])).toBeGreaterThan(0);
      expect(compare(parsed, [2, 1, 0])).toBeGreaterThanOrEqual(0);
    });

    it("natively is Stator's own version (a Patroni peer would take it for a pre-1.5.6 Patroni)", () => {
      const data = memberData(facts({ config: { ...config, compat: 'stator' }, version: '0.1.0' }));
      expect(data.version).toBe('0.1.0');
      expect(data.stator_version).toBe('0.1.0');
    });

    it('names the runtime the agent runs on when it is known, after stator_version', () => {
      const data = memberData(facts({ runtime: 'node 24.21.0' }));
      expect(data.stator_runtime).toBe('node 24.21.0');
      expect(Object.keys(data).slice(4, 7)).toEqual(['version', 'stator_version', 'stator_runtime']);
      expect(memberData(facts({})).stator_runtime).toBeUndefined();
    });

    it('keeps the reference key order: version and stator_version right after role', () => {
      const data = memberData(facts({ config: { ...config, compat: 'patroni' } }));
      expect(Object.keys(data).slice(0, 6)).toEqual([
        'conn_url',
        'api_url',
        'state',
        'role',
        'version',
        'stator_version',
      ]);
    });

    it('a primary past its promotion checkpoint omits checkpoint_after_promote, one before it says false', () => {
      expect(memberData(facts({ role: 'primary' })).checkpoint_after_promote).toBeUndefined();
      expect(memberData(facts({ role: 'primary', checkpointAfterPromotePending: true })).checkpoint_after_promote).toBe(
        false,
      );
    });
  });
});

/** When a primary stopped cleanly publishes where its WAL ends (a whole-cluster restart's race depends on it). */
describe('shutdownCheckpoint', () => {
  const stoppedLeader: ShutdownFacts = {
    clusterState: 'shut down',
    checkpointLsn: 83_886_120,
    timeline: 3,
    serverRead: false,
    leaving: false,
    sinceStartMs: 3_000,
    ttlMs: 10_000,
  };

  it('is shown while the agent stops, and for the first ttl after it starts again', () => {
    expect(shutdownCheckpoint({ ...stoppedLeader, leaving: true, sinceStartMs: 60_000 })).toEqual({
      lsn: 83_886_120,
      timeline: 3,
    });
    expect(shutdownCheckpoint(stoppedLeader)).toEqual({ lsn: 83_886_120, timeline: 3 });
    expect(shutdownCheckpoint({ ...stoppedLeader, sinceStartMs: 10_001 })).toBeNull();
  });

  it('gives way to the reading of the running server, and only to a reading', () => {
    expect(shutdownCheckpoint({ ...stoppedLeader, serverRead: true })).toBeNull();
  });

  it('is not shown by a server that crashed or was in recovery', () => {
    expect(shutdownCheckpoint({ ...stoppedLeader, clusterState: 'in production' })).toBeNull();
    expect(shutdownCheckpoint({ ...stoppedLeader, clusterState: 'shut down in recovery' })).toBeNull();
  });
});
