import { effectiveDynamicConfig } from '../../src/config/dynamic-config';
import { reviewConfigWrite } from '../../src/config/config-write-review';
import { isIgnoredSlot, readIgnoreSlots, slotsProblems } from '../../src/config/slots-config';
import { planSlots } from '../../src/ha/slot-plan';
import { cluster, member } from './ha/snapshot-factory';

const twoMembers = cluster({ members: [member('node1'), member('node2')] });

/** `slots` and `ignore_slots` as the dynamic configuration gives them. */
describe('permanent slots and ignore_slots', () => {
  it('accepts physical slots and logical slots with their database and plugin, and refuses the rest naming the slot and the rule', () => {
    expect(
      slotsProblems({
        archiver: { type: 'physical' },
        standby_dc2: null,
        cdc: { type: 'logical', database: 'app', plugin: 'pgoutput' },
      }),
    ).toEqual([]);
    expect(
      slotsProblems({
        'Bad-Name': { type: 'physical' },
        s1: { type: 'sideways' },
        cdc: { type: 'logical', database: 'app' },
        s2: 'physical',
      }),
    ).toEqual([
      'slots.Bad-Name: a slot name is 1 to 63 lowercase letters, digits or underscores',
      'slots.s1.type: must be physical or logical',
      'slots.cdc.plugin: a logical slot needs its plugin, a name of 1 to 63 letters, digits or _.$-',
      'slots.s2: must be a mapping (type: physical), or 0 for a physical slot',
    ]);
    expect(
      reviewConfigWrite({ slots: { archiver: { type: 'physical' } }, ignore_slots: [{ name: 'debezium' }] }),
    ).toEqual({ problems: [] });
  });

  it("accepts Patroni's short form (a slot given as 0) and cluster_type primary or standby", () => {
    // What Patroni's permanent_slots feature posts.
    expect(
      reviewConfigWrite({
        slots: { test_physical: 0, test_logical: { type: 'logical', database: 'postgres', plugin: 'test_decoding' } },
      }).problems,
    ).toEqual([]);
    expect(
      slotsProblems({
        dr: { type: 'physical', cluster_type: 'standby' },
        main: { cluster_type: 'primary' },
        x: 1,
        y: { cluster_type: 'replica' },
      }),
    ).toEqual([
      'slots.x: must be a mapping (type: physical), or 0 for a physical slot',
      'slots.y.cluster_type: must be primary or standby (the kind of cluster the slot is kept in)',
    ]);
    expect(effectiveDynamicConfig({ slots: { test_physical: 0, blank: null } }, {}).config.slots).toEqual([
      { name: 'test_physical', type: 'physical' },
      { name: 'blank', type: 'physical' },
    ]);
  });

  it.each([
    ['a primary cluster', {}, ['both', 'only_primary']],
    ['a standby cluster', { standby_cluster: { host: 'dc1.example.net', port: 5432 } }, ['both', 'only_standby']],
    [
      'an archive-only standby cluster',
      { standby_cluster: { restore_command: 'cp /a/%f %p' } },
      ['both', 'only_standby'],
    ],
  ])('keeps, in %s, the physical slots whose cluster_type is its own or absent', (_name, extra, kept) => {
    const slots = {
      both: { type: 'physical' },
      only_primary: { type: 'physical', cluster_type: 'primary' },
      only_standby: { type: 'physical', cluster_type: 'standby' },
    };
    const { config, adjustments } = effectiveDynamicConfig({ slots, ...extra }, {});
    expect(config.slots.map((slot) => slot.name)).toEqual(kept);
    expect(adjustments).toEqual([]);
    expect(
      planSlots({
        self: { name: 'node1', tags: {} },
        isLeader: true,
        cluster: twoMembers,
        dynamic: config,
      }).physical.map((slot) => slot.name),
    ).toEqual(['node2', ...kept]);
  });

  it('keeps the usable slots of a stored value and says what it skipped', () => {
    const { config, adjustments } = effectiveDynamicConfig(
      {
        slots: {
          archiver: {},
          cdc: { type: 'logical' },
          app: { type: 'logical', database: 'app', plugin: 'pgoutput' },
        },
        ignore_slots: [{ type: 'logical' }, 'junk'],
      },
      {},
    );
    expect(config.slots).toEqual([
      { name: 'archiver', type: 'physical' },
      { name: 'app', type: 'logical', database: 'app', plugin: 'pgoutput' },
    ]);
    expect(config.ignore_slots).toEqual([{ type: 'logical' }]);
    expect(adjustments).toEqual(['permanent slot cdc skipped: a logical slot needs its database and plugin']);
  });

  it('ignores a slot when every field an entry gives matches', () => {
    const matchers = readIgnoreSlots([{ name: 'backup', type: 'physical' }, { plugin: 'wal2json' }]);
    expect(isIgnoredSlot(matchers, { name: 'backup', type: 'physical' })).toBe(true);
    expect(isIgnoredSlot(matchers, { name: 'backup', type: 'logical' })).toBe(false);
    expect(isIgnoredSlot(matchers, { name: 'cdc', type: 'logical', plugin: 'wal2json' })).toBe(true);
    expect(isIgnoredSlot(matchers, { name: 'other', type: 'physical' })).toBe(false);
  });

  it('keeps one slot per other member and each permanent physical slot, never one named after the node itself', () => {
    const { config } = effectiveDynamicConfig(
      { slots: { archiver: { type: 'physical' }, node1: { type: 'physical' } } },
      {},
    );
    const view = cluster({ members: [member('node1'), member('node2'), member('Node-3')] });
    expect(
      planSlots({ self: { name: 'node1', tags: {} }, isLeader: true, cluster: view, dynamic: config }).physical.map(
        (slot) => slot.name,
      ),
    ).toEqual(['node2', 'node_3', 'archiver']);
  });
});
