import { physicalSlotsInOrder } from '../../../src/postgresql/physical-slots';

const slot = (name: string, active = false) => ({ name, active });

describe('physicalSlotsInOrder: whether the cycle may skip its slot statement', () => {
  it.each([
    ['every wanted slot exists, nothing else', ['node2', 'node3'], [], [slot('node2', true), slot('node3')], true],
    ['a wanted slot is missing', ['node2', 'node3'], [], [slot('node2', true)], false],
    ['an idle slot nobody wants is left', ['node2'], [], [slot('node2'), slot('old_member')], false],
    [
      'an unwanted slot a standby streams from is left alone anyway',
      ['node2'],
      [],
      [slot('node2'), slot('cascade', true)],
      true,
    ],
    [
      'an unwanted idle slot that ignore_slots covers is kept',
      ['node2'],
      [{ name: 'backup_tool' }],
      [slot('node2'), slot('backup_tool')],
      true,
    ],
    ['no slots wanted and none there', [], [], [], true],
    [
      'a wanted slot whose WAL is lost (to be dropped and created again)',
      ['node2', 'archiver'],
      [],
      [slot('node2', true), { name: 'archiver', active: false, lost: true }],
      false,
    ],
    [
      'an unwanted lost slot a standby still holds is left alone',
      ['node2'],
      [],
      [slot('node2'), { name: 'cascade', active: true, lost: true }],
      true,
    ],
  ])('%s', (_case, wanted, keep, known, expected) => {
    expect(physicalSlotsInOrder(wanted, keep, known)).toBe(expected);
  });
});
