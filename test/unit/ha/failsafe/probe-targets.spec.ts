import { ClusterView, Member } from '../../../../src/dcs/dcs.port';
import { probeTargets, weighedReadings } from '../../../../src/ha/failsafe/probe-targets';

const member = (name: string): Member => ({
  name,
  modRevision: '1',
  data: {
    conn_url: `postgres://${name}:5432/postgres`,
    api_url: `http://${name}:8008/patroni`,
    state: 'running',
    role: 'replica',
    version: '0.1.0',
  },
});

function cluster(leader: string | null, members: string[], failsafe: string[] | null): ClusterView {
  return {
    leader: leader ? { value: leader, modRevision: '1' } : null,
    members: members.map(member),
    initialize: '1',
    config: null,
    failover: null,
    history: null,
    sync: null,
    status: null,
    failsafe: failsafe
      ? { value: Object.fromEntries(failsafe.map((n) => [n, `http://${n}:8008/patroni`])), modRevision: '1' }
      : null,
    revision: '1',
  };
}

describe('probeTargets: whom a node probes before it decides', () => {
  it.each([
    // The failsafe leader n1, cut off from etcd, lost its member key with its lease: the race still asks it.
    ['the race, failsafe mode on', null, true, ['n2', 'n1']],
    ['the race, failsafe mode off', null, false, ['n2']],
    ['a leader key held, failsafe mode on', 'n2', true, ['n2']],
  ] as const)('%s', (_case, leader, failsafeMode, names) => {
    const targets = probeTargets(cluster(leader, ['n2', 'n3'], ['n1', 'n2', 'n3']), 'n3', failsafeMode);
    expect(targets.map((t) => t.name)).toEqual(names);
    expect(targets.every((t) => t.apiUrl === `http://${t.name}:8008/patroni`)).toBe(true);
  });

  it('a member named in both is probed once, at its member key’s API URL; without a view, nobody', () => {
    const view = cluster(null, ['n1', 'n2'], ['n1', 'n2', 'n3']);
    view.members[0].data.api_url = 'http://10.0.0.1:8008/patroni';
    expect(probeTargets(view, 'n2', true)).toEqual([
      { name: 'n1', apiUrl: 'http://10.0.0.1:8008/patroni' },
      { name: 'n3', apiUrl: 'http://n3:8008/patroni', failsafeOnly: true },
    ]);
    expect(probeTargets(null, 'n2', true)).toEqual([]);
  });

  it('a member named only in /failsafe weighs in the race only when it runs as a primary', () => {
    const targets = probeTargets(cluster(null, ['n2'], ['n1', 'n2', 'n3']), 'n3', true);
    expect(targets.map((t) => [t.name, t.failsafeOnly ?? false])).toEqual([
      ['n2', false],
      ['n1', true],
    ]);
    const replica = { reachable: true, isPrimary: false, walPosition: 9, tags: { failover_priority: 2 } };
    // n1, cut off from etcd (its key gone), answers as a replica ahead of n3: as without failsafe mode, it holds nobody back.
    expect(
      weighedReadings(targets, [
        { name: 'n2', ...replica },
        { name: 'n1', ...replica },
      ]).map((r) => r.name),
    ).toEqual(['n2']);
    // The failsafe leader still runs as a primary: the race sees it and stops.
    const primary = { name: 'n1', reachable: true, isPrimary: true, walPosition: 9 };
    expect(weighedReadings(targets, [{ name: 'n2', reachable: false }, primary])).toEqual([
      { name: 'n2', reachable: false },
      primary,
    ]);
  });
});
