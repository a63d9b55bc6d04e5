import { effectiveTags, tagConflicts } from '../../../src/ha/tags';

describe('tags', () => {
  it.each<[Record<string, unknown>, string[]]>([
    [
      { nofailover: true, failover_priority: '1' },
      ['Conflicting configuration between nofailover: True and failover_priority: 1. Defaulting to nofailover: True'],
    ],
    [
      { nofailover: false, failover_priority: 0 },
      ['Conflicting configuration between nofailover: False and failover_priority: 0. Defaulting to nofailover: False'],
    ],
    [
      { nosync: true, sync_priority: 2 },
      ['Conflicting configuration between nosync: True and sync_priority: 2. Defaulting to nosync: True'],
    ],
    [{ nofailover: true, failover_priority: 0 }, []],
    [{ nofailover: false, failover_priority: 3 }, []],
    [{ failover_priority: 0 }, []],
    [{ nofailover: true, failover_priority: 'high' }, []],
  ])('warns about %j as the reference does', (tags, expected) => {
    expect(tagConflicts(tags)).toEqual(expected);
  });

  it('publishes nofailover next to failover_priority even when false, and drops other false built-in tags', () => {
    expect(effectiveTags({ nofailover: false, failover_priority: '0', noloadbalance: false, zone: 'a' })).toEqual({
      nofailover: false,
      failover_priority: '0',
      zone: 'a',
    });
  });
});
