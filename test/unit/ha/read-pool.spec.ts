import { decide } from '../../../src/ha/decide';
import { promotionDrainMs, readPoolWithdrawal } from '../../../src/ha/read-pool';
import { cluster, leaderKey, snapshot } from './snapshot-factory';

const now = Date.parse('2026-01-01T00:00:00Z');

describe('a node about to be primary leaves the read pool first', () => {
  it.each([
    ['a follower with no request', 'follower', null, null],
    ['the lock holder', 'leader', null, 'holds the leader lock'],
    [
      'the candidate of a due switchover',
      'follower',
      { member: 'n1', leader: 'n2' },
      'named candidate of a due switchover or failover',
    ],
    [
      'the candidate of a switchover scheduled later',
      'follower',
      { member: 'n1', leader: 'n2', scheduled_at: '2026-01-01T00:05:00Z' },
      null,
    ],
    ['another node is the candidate', 'follower', { member: 'n3', leader: 'n2' }, null],
  ] as const)('%s', (_name, leadership, request, expected) => {
    const view = cluster({ failover: request ? { value: { ...request }, modRevision: '9' } : null });
    expect(readPoolWithdrawal(leadership, view, 'n1', now)).toBe(expected);
  });
});

describe('promotionDrainMs: what is left of the drain when the lock is taken', () => {
  it.each([
    ['a failover: the replica left the read pool as it took the lock', 750, now, now, false, 750],
    ['not recorded as withdrawn: the whole drain', 750, null, now, false, 750],
    ['a switchover candidate withdrawn 2 s before: nothing left', 750, now - 2000, now, false, 0],
    ['withdrawn 300 ms before: the rest', 750, now - 300, now, false, 450],
    ['noloadbalance: never in a read pool', 750, now, now, true, 0],
    ['drain turned off', 0, now, now, false, 0],
  ] as const)('%s', (_name, drain, withdrawnAt, at, noLoadBalance, expected) => {
    expect(promotionDrainMs(drain, withdrawnAt, at, noLoadBalance)).toBe(expected);
  });
});

describe('decide() promotes after the drain', () => {
  const promoteOf = (input: Parameters<typeof snapshot>[0]) => {
    const decision = decide(snapshot(input));
    if ('need' in decision) throw new Error(`needs ${decision.need}`);
    return decision.actions.find((action) => action.type === 'promote');
  };

  it.each([
    [
      'the winner of a failover race drains the whole time',
      { peers: [], lockResult: 'acquired', local: { readPoolWithdrawnAt: now } },
      750,
    ],
    [
      'with a shorter drain configured',
      {
        peers: [],
        lockResult: 'acquired',
        config: { load_balancer_drain_ms: 400 },
        local: { readPoolWithdrawnAt: now },
      },
      400,
    ],
    [
      'a noloadbalance winner promotes at once',
      { peers: [], lockResult: 'acquired', local: { tags: { noloadbalance: true }, readPoolWithdrawnAt: now } },
      0,
    ],
    [
      'a switchover candidate out of the read pool since the request promotes at once',
      {
        peers: [],
        lockResult: 'acquired',
        cluster: cluster({ failover: { value: { member: 'n1', leader: 'n2' }, modRevision: '9' } }),
        local: { readPoolWithdrawnAt: now - 1200 },
      },
      0,
    ],
    [
      'a lock holder still in recovery drains what is left',
      {
        lockResult: 'refreshed',
        cluster: cluster({ leader: leaderKey('n1') }),
        local: { leadership: 'leader', readPoolWithdrawnAt: now - 500 },
      },
      250,
    ],
  ] as const)('%s', (_name, input, drainMs) => {
    expect(promoteOf(input as Parameters<typeof snapshot>[0])).toEqual({ type: 'promote', drainMs });
  });
});
