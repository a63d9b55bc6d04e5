import { decide, Decision } from '../../../src/ha/decide';
import { PeerReading } from '../../../src/ha/cluster-snapshot';
import { FailoverRequest } from '../../../src/dcs/dcs.port';
import { cluster, leaderKey, primarySample, snapshot, SnapshotOverrides } from './snapshot-factory';

/** A reachable replica at `wal` (this node's default position is 50,000,000). */
const peer = (name: string, site: string | undefined, priority = 1, wal = 50_000_000): PeerReading => ({
  name,
  reachable: true,
  walPosition: wal,
  ...(site ? { site } : {}),
  tags: { failover_priority: priority },
});

/** The leader race of a leaderless cluster whose last leader ran in `currentSite`. */
function race(
  ownSite: string | undefined,
  ownPriority: number,
  peers: PeerReading[],
  currentSite?: string,
  failover?: FailoverRequest,
): SnapshotOverrides {
  return {
    peers,
    local: { ...(ownSite ? { site: ownSite } : {}), tags: { failover_priority: ownPriority } },
    cluster: cluster({
      status: {
        value: { optime: 50_000_000, ...(currentSite ? { current_site: currentSite } : {}) },
        modRevision: '4',
      },
      failover: failover ? { value: failover, modRevision: '9' } : null,
    }),
  };
}

function outcome(decision: Decision): string {
  if ('need' in decision) return decision.need;
  return [decision.verdict, ...(decision.notes ?? [])].join(' | ');
}

const DEFERS = 'following a different leader because i am not the healthiest node';
/** The snapshot factory's time. */
const NOW = Date.parse('2026-01-01T00:00:00Z');

describe('the leader race with sites (Patroni site awareness)', () => {
  const rows: Array<[string, SnapshotOverrides, string]> = [
    // site_awareness.feature, "test local failover": postgres-1 (dc1, priority 2) wins over dc2's priorities 3 and 4
    [
      'a member of the current site races despite higher priorities elsewhere',
      race('dc1', 2, [peer('n2', 'dc2', 3), peer('n3', 'dc2', 4)], 'dc1'),
      'acquireLock',
    ],
    [
      'a member of another site defers to one of the current site',
      race('dc2', 4, [peer('n4', 'dc1', 2), peer('n3', 'dc2', 3)], 'dc1'),
      `${DEFERS} | Local failover in the current site dc1 is possible, while my site is dc2`,
    ],
    [
      'a node without a site defers to one of the current site',
      race(undefined, 4, [peer('n2', 'dc1', 1)], 'dc1'),
      `${DEFERS} | Local failover in the current site dc1 is possible, while my site is not set`,
    ],
    [
      'within the current site failover_priority still decides',
      race('dc1', 1, [peer('n2', 'dc1', 2), peer('n3', 'dc2', 0)], 'dc1'),
      `${DEFERS} | n2 has equally tolerable WAL position and priority 2, while this node has priority 1`,
    ],
    // "test site failover with failover_priority": dc1 is empty, postgres-3 (priority 4) wins over postgres-2 (3)
    [
      'with nobody left in the current site the race crosses sites, by priority',
      race('dc2', 4, [peer('n2', 'dc2', 3)], 'dc1'),
      'acquireLock',
    ],
    [
      '... and the lower priority defers',
      race('dc2', 3, [peer('n3', 'dc2', 4)], 'dc1'),
      `${DEFERS} | n3 has equally tolerable WAL position and priority 4, while this node has priority 3`,
    ],
    [
      'a member of the current site that is behind does not hold the race',
      race('dc2', 1, [peer('n4', 'dc1', 1, 40_000_000)], 'dc1'),
      'acquireLock',
    ],
    [
      '... unless the leader key went away less than loop_wait ago: its reading may trail',
      {
        ...race('dc2', 1, [peer('n4', 'dc1', 1, 40_000_000)], 'dc1'),
        raceBackoff: { noLeaderSince: NOW - 1_000, previousWalPosition: null },
      },
      `${DEFERS} | n4 of the current site dc1 shows a wal position behind mine: waiting for its next reading before a cross-site failover`,
    ],
    [
      '... and after loop_wait it is taken as it is',
      {
        ...race('dc2', 1, [peer('n4', 'dc1', 1, 40_000_000)], 'dc1'),
        raceBackoff: { noLeaderSince: NOW - 10_001, previousWalPosition: null },
      },
      'acquireLock',
    ],
    [
      '... and a member of the current site never waits for it',
      {
        ...race('dc1', 1, [peer('n4', 'dc1', 1, 40_000_000)], 'dc1'),
        raceBackoff: { noLeaderSince: NOW - 1_000, previousWalPosition: null },
      },
      'acquireLock',
    ],
    [
      'nor one that does not answer',
      race('dc2', 1, [{ name: 'n4', reachable: false, site: 'dc1' }], 'dc1'),
      'acquireLock',
    ],
    [
      'nor one tagged nofailover',
      race('dc2', 1, [{ ...peer('n4', 'dc1'), tags: { nofailover: true } }], 'dc1'),
      'acquireLock',
    ],
    [
      'a member of another site that is ahead still wins: no acknowledged WAL is given up for a site',
      race('dc1', 1, [peer('n3', 'dc2', 1, 60_000_000)], 'dc1'),
      `${DEFERS} | Wal position of n3 is ahead of my wal position`,
    ],
    [
      'without current_site the race is as before',
      race('dc1', 1, [peer('n2', 'dc2', 2)]),
      `${DEFERS} | n2 has equally tolerable WAL position and priority 2, while this node has priority 1`,
    ],
    // a switchover to a site: the old leader n0 stepped down
    [
      'a switchover to a site: a member of another site defers',
      race('dc1', 5, [peer('n2', 'dc2', 1)], 'dc1', { leader: 'n0', site: 'dc2' }),
      `${DEFERS} | Switchover to the requested site dc2 is possible, while my site is dc1`,
    ],
    [
      "a switchover to a site: its member races whatever the others' priorities",
      race('dc2', 1, [peer('n4', 'dc1', 5)], 'dc1', { leader: 'n0', site: 'dc2' }),
      'acquireLock',
    ],
    [
      'a switchover to a site: priorities decide within it',
      race('dc2', 1, [peer('n3', 'dc2', 2)], 'dc1', { leader: 'n0', site: 'dc2' }),
      `${DEFERS} | n3 has equally tolerable WAL position and priority 2, while this node has priority 1`,
    ],
    [
      'a switchover to a site nobody of which can take over: the others race by priority',
      race('dc1', 2, [peer('n2', 'dc1', 1)], 'dc1', { leader: 'n0', site: 'dc3' }),
      'acquireLock',
    ],
  ];

  it.each(rows)('%s', (_description, input, expected) => {
    expect(outcome(decide(snapshot(input)))).toBe(expected);
  });

  it('the winner of a cross-site race says so in the log before its verdict', () => {
    const won = { ...race('dc2', 4, [peer('n2', 'dc2', 3)], 'dc1'), lockResult: 'acquired' as const };
    expect(outcome(decide(snapshot(won)))).toBe(
      'promoted self to leader by acquiring session lock | No members in the current site dc1. Performing cross-site failover',
    );
  });

  it('a switchover to a site is due even without a candidate', () => {
    const requested = race('dc1', 1, [peer('n2', 'dc1', 1)], 'dc1', { site: 'dc2' });
    requested.peers = [peer('n2', 'dc2', 1)];
    expect(outcome(decide(snapshot(requested)))).toBe(
      `${DEFERS} | Manual failover to the requested site dc2 is possible, while my site is dc1`,
    );
  });
});

describe('the leader asked to switch over to a site', () => {
  const leading = (peers: PeerReading[]): SnapshotOverrides => ({
    lockResult: 'refreshed',
    peers,
    local: { site: 'dc1', sample: primarySample(), role: 'primary', leadership: 'leader' },
    cluster: cluster({ leader: leaderKey('n1'), failover: { value: { leader: 'n1', site: 'dc2' }, modRevision: '9' } }),
  });

  it('steps down when a member of that site can take over', () => {
    const decision = decide(snapshot(leading([peer('n2', 'dc1'), peer('n3', 'dc2')])));
    expect(outcome(decision)).toBe('switchover: demoting myself');
  });

  it('keeps leading, and clears the request, when none of that site can', () => {
    const decision = decide(
      snapshot(leading([peer('n2', 'dc1'), { ...peer('n3', 'dc2'), tags: { nofailover: true } }])),
    );
    expect(outcome(decision)).toBe('switchover: no healthy members found in site dc2, switchover is not possible');
    expect('actions' in decision && decision.actions.map((a) => a.type)).toEqual(['clearFailover', 'leaderDuties']);
  });
});
