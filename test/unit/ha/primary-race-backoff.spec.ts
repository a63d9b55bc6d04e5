import { decide } from '../../../src/ha/decide';
import { cluster, sample, snapshot, SnapshotOverrides } from './snapshot-factory';

const NOW = Date.parse('2026-01-01T00:00:00Z');
const WAL = 50_000_000;
/** A leaderless cluster seen `since` ms ago, this replica's WAL `moved` since the previous cycle; backoff 6 s, loop_wait 2 s. */
const leaderless = (sinceMs: number, moved: boolean, extra: SnapshotOverrides = {}): SnapshotOverrides => ({
  cluster: cluster({ leader: null }),
  config: { primary_race_backoff: 6, loop_wait: 2 },
  raceBackoff: { noLeaderSince: NOW - sinceMs, previousWalPosition: moved ? WAL - 1000 : WAL },
  ...extra,
});
const holding = (seconds: number) => ({
  verdict: `My (n1) wal position moved since last heart beat loop, ${seconds} seconds until leader race`,
});

describe('primary_race_backoff (Patroni 4.1): replicas hold back from the leader race while WAL still flows from the primary', () => {
  it.each([
    [
      'WAL moved, 2 s into a 6 s backoff: holds back, woken at its end',
      leaderless(2000, true),
      { ...holding(4), actions: [{ type: 'wakeAt', at: NOW + 4000 }] },
    ],
    [
      'the first loop_wait after the key went: holds back even if WAL did not move',
      leaderless(1000, false),
      { ...holding(5), actions: [{ type: 'wakeAt', at: NOW + 5000 }] },
    ],
    ['WAL did not move past the first loop_wait: races', leaderless(3000, false), { need: 'probePeers' }],
    ['the backoff is over though WAL still moves: races', leaderless(6500, true), { need: 'probePeers' }],
    [
      'not streaming (WAL from the archive): races',
      leaderless(3000, true, { local: { sample: sample({ replicationState: null }) } }),
      { need: 'probePeers' },
    ],
    [
      'off (0, the default): races',
      leaderless(2000, true, { config: { primary_race_backoff: 0 } }),
      { need: 'probePeers' },
    ],
    [
      'no reading from the previous cycle: races',
      leaderless(2000, true, { raceBackoff: { noLeaderSince: NOW - 2000, previousWalPosition: null } }),
      { need: 'probePeers' },
    ],
    [
      'a manual failover names a candidate: races',
      leaderless(2000, true, {
        cluster: cluster({ leader: null, failover: { value: { member: 'n2' }, modRevision: '3' } }),
      }),
      { need: 'probePeers' },
    ],
    [
      'a standby cluster: races',
      leaderless(2000, true, {
        config: {
          primary_race_backoff: 6,
          loop_wait: 2,
          standby_cluster: {
            host: 'h',
            port: 5432,
            primary_slot_name: null,
            restore_command: null,
            archive_cleanup_command: null,
            recovery_min_apply_delay: null,
            create_replica_methods: null,
          },
        },
      }),
      { need: 'probePeers' },
    ],
  ] as const)('%s', (_name, overrides, expected) => {
    expect(decide(snapshot(overrides as SnapshotOverrides))).toEqual(expected);
  });

  it('paused: no race to hold back', () => {
    const decision = decide(
      snapshot(leaderless(2000, true, { config: { primary_race_backoff: 6, loop_wait: 2, pause: true }, peers: [] })),
    );
    expect('verdict' in decision && decision.verdict).not.toMatch(/until leader race/);
  });
});
