import { lsnHeader } from '../../../src/ha/failsafe/failsafe-caller';
import { FailsafeState } from '../../../src/ha/failsafe/failsafe-state';
import { failsafeLeaderView } from '../../../src/ha/failsafe/failsafe-view';
import { planSlots } from '../../../src/ha/slot-plan';
import { slotUpkeep } from '../../../src/ha/slot-upkeep';
import { cluster, leaderKey, member } from './snapshot-factory';

/**
 * While the DCS is down, the failsafe leader moves its idle slot for a member that cascades from
 * another member to the WAL position that member answered its `POST /failsafe` with (the `lsn`
 * header, as Patroni's `check_failsafe_topology` / `Failsafe.update_cluster`).
 */
describe("the failsafe leader's slots from its members' answers", () => {
  // dcs_failsafe_mode.feature's three nodes: p1 leads, p0 streams from it, p2 cascades from p0.
  const last = cluster({
    leader: leaderKey('p1'),
    members: [
      member('p1', { role: 'primary', xlog_location: 9000 }),
      member('p0', { xlog_location: 8000 }),
      member('p2', { xlog_location: 7000, tags: { replicatefrom: 'p0' } }),
    ],
    status: { value: { optime: 9000, slots: { p0: 8000, p2: 7000, p1: 9000 } }, modRevision: '4' },
  });
  const dynamic = { use_slots: true, member_slots_ttl: 1800, slots: [], standby_cluster: null };
  const leaderPlan = (view: typeof last) =>
    planSlots({ self: { name: 'p1', tags: {} }, isLeader: true, cluster: view, dynamic });
  const idleOnLeader = {
    physical: [
      { name: 'p0', active: true, restartLsn: 8000 },
      { name: 'p2', active: false, restartLsn: 7000 },
    ],
  };

  it.each([
    ['the cascading member answered further on: its slot moves there', { p0: 9500, p2: 9400 }, { p2: 9400 }],
    ['a member streaming from the leader: its slot is in use, its answer moves nothing', { p0: 9500 }, {}],
    ['no answer carried a position: the slot stays where the last view put it', {}, {}],
    ['an answer behind the slot: never moved back', { p2: 6000 }, {}],
  ])('%s', (_case, positions: Record<string, number>, advance) => {
    const view = failsafeLeaderView(last, positions)!;
    expect(slotUpkeep(leaderPlan(view), [], idleOnLeader, true).advance).toEqual(advance);
  });

  it('leaves the view read from the DCS as it was, and has none without one', () => {
    failsafeLeaderView(last, { p2: 9400 });
    expect(last.members.find((m) => m.name === 'p2')?.data.xlog_location).toBe(7000);
    expect(failsafeLeaderView(null, { p2: 9400 })).toBeNull();
  });

  it.each([
    ['67110544', 67110544],
    [' 42 ', 42],
    ['0', undefined],
    ['0/3000060', undefined],
    ['-5', undefined],
    ['1e9', undefined],
    ['99999999999999999999', undefined],
    [undefined, undefined],
    [['1', '2'], undefined],
  ])('the lsn header %j reads as %j', (header, expected) => {
    expect(lsnHeader(header as string | string[] | undefined)).toBe(expected);
  });

  it('keeps the positions of the last accepted round only while that round holds', () => {
    const state = new FailsafeState();
    state.roundAccepted(1_000, [{ name: 'p0' }, { name: 'p2', lsn: 9400 }]);
    expect(state.memberPositions()).toEqual({ p2: 9400 });
    state.leaderEnded();
    expect(state.memberPositions()).toEqual({});
  });
});
