import { ClusterView, Member } from '../../../src/dcs/dcs.port';
import { MemberSightings } from '../../../src/ha/member-sightings';

const MINUTE = 60_000;

function view(members: string[], leader: string | null, historyLeader?: string): ClusterView {
  return {
    leader: leader ? { value: leader, modRevision: '1' } : null,
    members: members.map((name): Member => ({
      name,
      data: { conn_url: '', api_url: '', state: 'running', role: 'replica', version: '0.1.0' },
      modRevision: '1',
    })),
    initialize: '1',
    config: null,
    failover: null,
    history: historyLeader
      ? {
          value: [[1, 100, 'no recovery target specified', '2026-11-25T00:00:00+00:00', historyLeader]],
          modRevision: '1',
        }
      : null,
    sync: null,
    status: null,
    failsafe: null,
    revision: '1',
  };
}

describe('member sightings: which departed members keep their slot', () => {
  it('keeps a member that left for member_slots_ttl, then lets it go', () => {
    const sightings = new MemberSightings();
    sightings.see(view(['node1', 'node2', 'node3'], 'node1'), 0);
    const afterLease = view(['node2', 'node3'], null);
    expect(sightings.departedWithin(afterLease, 1800, 10_000)).toEqual(['node1']);
    expect(sightings.departedWithin(afterLease, 1800, 30 * MINUTE)).toEqual(['node1']);
    expect(sightings.departedWithin(afterLease, 1800, 30 * MINUTE + 1)).toEqual([]);
    // Forgotten for good once expired, even if the ttl is raised again later.
    expect(sightings.departedWithin(afterLease, 3600, 30 * MINUTE + 2)).toEqual([]);
  });

  it('member_slots_ttl 0 drops a departed member at once', () => {
    const sightings = new MemberSightings();
    sightings.see(view(['node1', 'node2'], 'node1'), 0);
    expect(sightings.departedWithin(view(['node2'], null), 0, 1)).toEqual([]);
  });

  it('names the leader of the current timeline from the history when asked (a new leader that never saw it)', () => {
    const sightings = new MemberSightings();
    sightings.see(view(['node2', 'node3'], 'node2', 'node1'), 1000);
    expect(sightings.departedWithin(view(['node2', 'node3'], 'node2'), 1800, 2000)).toEqual([]);
    sightings.see(view(['node2', 'node3'], 'node2', 'node1'), 1000, { history: true });
    expect(sightings.departedWithin(view(['node2', 'node3'], 'node2'), 1800, 2000)).toEqual(['node1']);
  });

  it('remembers at most 1,000 names, the most recently seen', () => {
    const sightings = new MemberSightings();
    for (let i = 0; i < 1500; i++) sightings.see(view([`m${i}`], null), i);
    const departed = sightings.departedWithin(view([], null), 1800, 1500);
    expect(departed).toHaveLength(1000);
    expect(departed[0]).toBe('m500');
  });
});
