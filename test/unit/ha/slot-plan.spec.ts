import { PermanentSlot } from '../../../src/config/slots-config';
import { ClusterView } from '../../../src/dcs/dcs.port';
import { planSlots, retainedSlots, SlotPlanInput, slotOnPrimary } from '../../../src/ha/slot-plan';
import { slotUpkeep } from '../../../src/ha/slot-upkeep';
import { cluster, leaderKey, member } from './snapshot-factory';

const physical = (name: string): PermanentSlot => ({ name, type: 'physical' });
const logical = (name: string): PermanentSlot => ({
  name,
  type: 'logical',
  database: 'postgres',
  plugin: 'test_decoding',
});
const dynamic = (slots: PermanentSlot[] = [], member_slots_ttl = 1800) => ({
  use_slots: true,
  member_slots_ttl,
  slots,
  standby_cluster: null,
});

/** permanent_slots.feature's cluster: p0 leads, p2 is nofailover, p3 cascades from p2. */
const fourNodes: ClusterView = cluster({
  leader: leaderKey('p0'),
  members: [
    member('p0', { role: 'primary', xlog_location: 9000 }),
    member('p1', { xlog_location: 8000 }),
    member('p2', { xlog_location: 7000, tags: { nofailover: true } }),
    member('p3', { xlog_location: 6500, tags: { replicatefrom: 'p2' } }),
  ],
  status: {
    value: {
      optime: 9000,
      slots: { p0: 9000, p1: 8000, p2: 7000, p3: 5000, test_physical: 4000, test_logical: 3000 },
      retain_slots: ['p0', 'p1', 'p2'],
    },
    modRevision: '4',
  },
});
/** nostream_node.feature's cluster: p1 is nostream, p2 cascades from p1. */
const nostream: ClusterView = cluster({
  leader: leaderKey('p0'),
  members: [
    member('p0', { role: 'primary' }),
    member('p1', { tags: { nostream: true } }),
    member('p2', { tags: { replicatefrom: 'p1' } }),
  ],
  status: null,
});
const permanent = [physical('test_physical'), physical('p3'), logical('test_logical')];
const onlyLogical = [logical('test_logical')];
const tagsOf = (view: ClusterView, name: string) => view.members.find((m) => m.name === name)?.data.tags ?? {};
const input = (view: ClusterView, name: string, overrides: Partial<SlotPlanInput> = {}): SlotPlanInput => ({
  self: { name, tags: tagsOf(view, name) },
  isLeader: view.leader?.value === name,
  cluster: view,
  dynamic: dynamic(permanent),
  ...overrides,
});
const names = (plan: ReturnType<typeof planSlots>) => ({
  physical: plan.physical.map((slot) => slot.name).sort(),
  logical: plan.logical.map((slot) => slot.name),
});

describe('planSlots: the slots each node keeps (Patroni 4.1 get_replication_slots)', () => {
  it.each([
    [
      'the leader: every other member, the permanent ones',
      fourNodes,
      'p0',
      {},
      { physical: ['p1', 'p2', 'p3', 'test_physical'], logical: ['test_logical'] },
    ],
    [
      'a replica: the other members too, so its promotion finds them',
      fourNodes,
      'p1',
      {},
      { physical: ['p0', 'p2', 'p3', 'test_physical'], logical: ['test_logical'] },
    ],
    [
      'a nofailover replica: only the members cascading from it, no permanent slot',
      fourNodes,
      'p2',
      {},
      { physical: ['p3'], logical: [] },
    ],
    [
      'a replica cascading from a streaming member keeps the logical ones',
      fourNodes,
      'p3',
      {},
      { physical: ['p0', 'p1', 'p2', 'test_physical'], logical: ['test_logical'] },
    ],
    [
      'member_slots_ttl 0: the leader keeps only its own streaming members',
      fourNodes,
      'p0',
      { dynamic: dynamic(permanent, 0) },
      { physical: ['p1', 'p2', 'p3', 'test_physical'], logical: ['test_logical'] },
    ],
    [
      'member_slots_ttl 0: a replica keeps only its cascading members (and retain_slots)',
      fourNodes,
      'p1',
      { dynamic: dynamic(permanent, 0) },
      { physical: ['p0', 'p2', 'p3', 'test_physical'], logical: ['test_logical'] },
    ],
    [
      'the leader of nostream: no slot for the nostream member',
      nostream,
      'p0',
      { dynamic: dynamic(onlyLogical) },
      { physical: ['p2'], logical: ['test_logical'] },
    ],
    [
      'a nostream replica: no logical slot (no feedback reaches the primary)',
      nostream,
      'p1',
      { dynamic: dynamic(onlyLogical) },
      { physical: ['p0', 'p2'], logical: [] },
    ],
    [
      'a replica below a nostream one: no logical slot either',
      nostream,
      'p2',
      { dynamic: dynamic(onlyLogical) },
      { physical: ['p0'], logical: [] },
    ],
    [
      'a nostream replica keeps the permanent physical ones',
      nostream,
      'p1',
      {},
      { physical: ['p0', 'p2', 'p3', 'test_physical'], logical: [] },
    ],
    [
      'use_slots off: none',
      fourNodes,
      'p1',
      { dynamic: { ...dynamic(permanent), use_slots: false } },
      { physical: [], logical: [] },
    ],
    [
      'a standby cluster: no logical slot',
      fourNodes,
      'p1',
      { dynamic: { ...dynamic(permanent), standby_cluster: { host: 'remote' } as never } },
      { physical: ['p0', 'p2', 'p3', 'test_physical'], logical: [] },
    ],
  ])('%s', (_case, view, name, overrides, expected) => {
    expect(names(planSlots(input(view, name, overrides)))).toEqual(expected);
  });

  it('keeps the slots retain_slots lists and the members this leader saw leave, never its own', () => {
    const view = cluster({
      leader: leaderKey('n1'),
      members: [member('n1'), member('n2')],
      status: { value: { retain_slots: ['n1', 'gone_a'] }, modRevision: '4' },
    });
    expect(
      names(
        planSlots({
          self: { name: 'n1', tags: {} },
          isLeader: true,
          cluster: view,
          dynamic: dynamic(),
          departed: ['Gone-B'],
        }),
      ).physical,
    ).toEqual(['gone_a', 'gone_b', 'n2']);
    // A nofailover node keeps none of them.
    expect(
      names(
        planSlots({
          self: { name: 'n2', tags: { nofailover: true } },
          isLeader: false,
          cluster: view,
          dynamic: dynamic(),
        }),
      ).physical,
    ).toEqual([]);
  });

  it('places each slot where the leader published it, or where a cascading member reports its WAL', () => {
    const plan = planSlots(input(fourNodes, 'p1'));
    expect(Object.fromEntries(plan.physical.map((slot) => [slot.name, [slot.position, slot.expectedActive]]))).toEqual({
      p0: [9000, false],
      p2: [7000, false],
      p3: [6500, false], // p3 cascades: its own report (6500) is ahead of the leader's idle copy (5000)
      test_physical: [4000, false],
    });
    const onLeader = planSlots(input(fourNodes, 'p0'));
    expect(onLeader.physical.find((slot) => slot.name === 'p1')?.expectedActive).toBe(true);
    expect(onLeader.physical.find((slot) => slot.name === 'p3')?.expectedActive).toBe(false);
    expect(planSlots(input(fourNodes, 'p2')).physical).toEqual([{ name: 'p3', position: 6500, expectedActive: true }]);
  });

  it('skips a permanent logical slot named after a member, and says so', () => {
    const plan = planSlots(input(fourNodes, 'p0', { dynamic: dynamic([logical('p1')]) }));
    expect(plan.logical).toEqual([]);
    expect(plan.conflicts).toEqual(['p1']);
  });

  it('follows replicatefrom up to the slot on the primary; none below a nostream node or in a loop', () => {
    expect(slotOnPrimary(fourNodes, 'p3', { replicatefrom: 'p2' })).toBe('p2');
    expect(slotOnPrimary(nostream, 'p2', { replicatefrom: 'p1' })).toBeNull();
    const loop = cluster({
      members: [member('a', { tags: { replicatefrom: 'b' } }), member('b', { tags: { replicatefrom: 'a' } })],
    });
    expect(slotOnPrimary(loop, 'a', { replicatefrom: 'b' })).toBeNull();
  });
});

describe('retainedSlots: /status retain_slots', () => {
  it('lists the streaming members, itself and the departed, not the permanent physical slots', () => {
    expect(retainedSlots(fourNodes, 'p0', dynamic(permanent), ['old-node'])).toEqual(['old_node', 'p0', 'p1', 'p2']);
    expect(retainedSlots(nostream, 'p0', dynamic(), [])).toEqual(['p0', 'p2']);
    expect(retainedSlots(fourNodes, 'p0', dynamic(permanent, 0), [])).toBeNull();
  });
});

describe('slotUpkeep: what a cycle changes beyond creating and dropping physical slots', () => {
  const plan = planSlots(input(fourNodes, 'p1'));
  const read = (name: string, restartLsn: number | null, extra: { active?: boolean; xmin?: boolean } = {}) => ({
    name,
    active: false,
    restartLsn,
    ...extra,
  });
  const lslot = (name: string, active = false, plugin = 'test_decoding') => ({
    name,
    active,
    database: 'postgres',
    plugin,
  });

  it.each([
    ['an idle copy behind its position is advanced', [read('p0', 100)], { p0: 9000 }],
    ['a copy already there is left alone', [read('p0', 9000)], {}],
    ['a copy in use is left alone', [read('p0', 100, { active: true })], {}],
    ['a copy holding an xmin is not advanced (it is reset)', [read('p0', 100, { xmin: true })], {}],
    ['a copy without restart_lsn is left alone', [read('p0', null)], {}],
    ['a slot not read yet is not advanced: it is created first', [], {}],
  ])('%s', (_case, physicalRead, advance) => {
    const upkeep = slotUpkeep(
      { ...plan, physical: plan.physical.filter((slot) => slot.name === 'p0') },
      [],
      { physical: physicalRead },
      true,
    );
    expect(upkeep.advance).toEqual(advance);
  });

  it('without a reading, advances every placed slot and drops nothing', () => {
    expect(slotUpkeep(plan, [], {}, true)).toEqual({
      resetXmin: [],
      advance: { p0: 9000, p2: 7000, p3: 6500, test_physical: 4000 },
      dropLogical: [],
    });
  });

  it('resets an idle slot holding an xmin that nothing should stream from, only with a leader', () => {
    const onP2 = planSlots(input(fourNodes, 'p2')); // p3 streams from p2: expected active
    const reading = {
      physical: [
        read('p0', 100, { xmin: true }),
        read('p2', 100, { xmin: true }),
        read('test_physical', 100, { xmin: true, active: true }),
      ],
    };
    expect(slotUpkeep(plan, [], reading, true).resetXmin).toEqual(['p0', 'p2']);
    expect(slotUpkeep(plan, [], reading, false).resetXmin).toEqual([]);
    expect(slotUpkeep(onP2, [], { physical: [read('p3', 100, { xmin: true })] }, true).resetXmin).toEqual([]);
  });

  it('drops the idle logical slots neither planned nor ignored, and a planned one with another plugin', () => {
    const reading = {
      logical: [
        lslot('test_logical'),
        lslot('dummy_slot'),
        lslot('unmanaged_slot_3'),
        lslot('busy', true),
        lslot('unmanaged_slot_1'),
      ],
    };
    const ignore = [
      { name: 'unmanaged_slot_3' },
      { name: 'unmanaged_slot_1', database: 'postgres', plugin: 'test_decoding' },
    ];
    expect(slotUpkeep(plan, ignore, reading, true).dropLogical).toEqual(['dummy_slot']);
    expect(slotUpkeep(plan, ignore, { logical: [lslot('test_logical', false, 'pgoutput')] }, true).dropLogical).toEqual(
      ['test_logical'],
    );
    // A nostream replica keeps no permanent logical slot: its copy goes.
    expect(
      slotUpkeep(
        planSlots(input(nostream, 'p1', { dynamic: dynamic(onlyLogical) })),
        [],
        { logical: [lslot('test_logical')] },
        true,
      ).dropLogical,
    ).toEqual(['test_logical']);
  });
});
