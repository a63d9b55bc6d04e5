import { cloneMember } from '../../../src/ha/clone-source';
import { decide } from '../../../src/ha/decide';
import { cluster, leaderKey, member, snapshot } from './snapshot-factory';

/** A cluster led by n0 (dc1): n1 (dc1) and n2, n3 (dc2), each tagged clonefrom unless said otherwise. */
const members = (overrides: Record<string, Record<string, unknown>> = {}) =>
  [
    member('n0', { role: 'primary', site: 'dc1' }),
    member('n1', { site: 'dc1', tags: { clonefrom: true } }),
    member('n2', { site: 'dc2', tags: { clonefrom: true } }),
    member('n3', { site: 'dc2', tags: { clonefrom: true } }),
  ].map((m) => (overrides[m.name] ? { ...m, data: { ...m.data, ...overrides[m.name] } } : m));

describe('the clone source with sites (Patroni get_clone_member)', () => {
  it.each<[string, ReturnType<typeof members>, string, string | undefined, string | undefined]>([
    // site_awareness.feature, "test site-aware reinit": postgres-2 (dc2) copies postgres-3, not the dc1 leader
    ['a replica of this site first', members(), 'n2', 'dc2', 'n3'],
    [
      'with none running in the site and the leader elsewhere, a replica of another site',
      members({ n3: { state: 'stopped' } }),
      'n2',
      'dc2',
      'n1',
    ],
    [
      'with no replica in the site, the leader of the site before a replica of another',
      members({ n1: { tags: {} } }),
      'n1',
      'dc1',
      'n0',
    ],
    ['no replica tagged clonefrom: the leader', members({ n1: { tags: {} }, n3: { tags: {} } }), 'n2', 'dc2', 'n0'],
    ['a node without a site takes any replica', members(), 'n2', undefined, 'n1'],
    [
      'the leader never counts as a replica, even tagged clonefrom',
      members({ n0: { tags: { clonefrom: true } }, n2: { tags: {} }, n3: { tags: {} } }),
      'n1',
      'dc1',
      'n0',
    ],
  ])('%s', (_description, clusterMembers, self, site, expected) => {
    expect(cloneMember(clusterMembers, self, 'n0', site)?.name).toBe(expected);
  });

  it('an empty node of dc2 bootstraps from the dc2 replica, and says so', () => {
    const decision = decide(
      snapshot({
        cluster: cluster({ leader: leaderKey('n0'), members: members() }),
        local: {
          name: 'n2',
          site: 'dc2',
          pgState: 'stopped',
          sample: null,
          role: 'uninitialized',
          dataDir: { state: 'empty', standbySignal: false },
        },
      }),
    );
    expect(decision).toMatchObject({
      verdict: "trying to bootstrap from replica 'n3'",
      actions: [{ type: 'clone', source: { name: 'n3' } }],
    });
  });
});
