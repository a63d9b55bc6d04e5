import { ManualClock, wallTimeOf } from '../../src/common/clock';
import { scheduledActionDue } from '../../src/ha/scheduled-restart';
import { WallClockJumps } from '../../src/ha/wall-clock-jumps';

describe('the wall clock and the monotonic clock', () => {
  it('a jump of the wall clock moves no monotonic reading and fires no timer; time passing moves both', () => {
    const clock = new ManualClock(Date.parse('2026-11-28T01:00:00Z'));
    const fired: number[] = [];
    clock.setTimer(() => fired.push(clock.monotonic()), 2000);
    const monotonicBefore = clock.monotonic();
    clock.jumpWall(600_000);
    expect(clock.monotonic()).toBe(monotonicBefore);
    expect(fired).toEqual([]);
    clock.jumpWall(-1_200_000);
    clock.advance(2000);
    expect(fired).toEqual([monotonicBefore + 2000]);
    expect(clock.now()).toBe(Date.parse('2026-11-28T00:50:02Z'));
  });

  it('a monotonic instant reads as the wall time it corresponds to now, "never" stays 0', () => {
    const clock = new ManualClock(Date.parse('2026-11-28T01:00:00Z'));
    const startedAt = clock.monotonic();
    clock.advance(3000);
    clock.jumpWall(-600_000);
    expect(clock.now() - wallTimeOf(clock, startedAt)).toBe(3000);
    expect(wallTimeOf(clock, 0)).toBe(0);
  });

  it('notices a jump between two cycles, in either direction, and says nothing of ordinary drift', () => {
    const clock = new ManualClock();
    const jumps = new WallClockJumps(clock);
    expect(jumps.observe()).toEqual({ jumpMs: 0, note: null });
    clock.advance(2000);
    expect(jumps.observe()).toEqual({ jumpMs: 0, note: null });
    clock.jumpWall(300_000);
    clock.advance(2000);
    expect(jumps.observe()).toMatchObject({
      jumpMs: 300_000,
      note: expect.stringMatching(/^the wall clock jumped forward by 300 s since the last cycle/),
    });
    clock.jumpWall(-300_000);
    expect(jumps.observe()).toMatchObject({ jumpMs: -300_000, note: expect.stringMatching(/jumped back by 300 s/) });
    clock.jumpWall(400);
    expect(jumps.observe()).toEqual({ jumpMs: 400, note: null });
  });
});

describe('a scheduled action (loop_wait 10: stale when more than 15 s late)', () => {
  const AT = Date.parse('2026-11-28T02:00:00Z');
  it.each([
    ['ahead', AT - 1000, 0, 'wait'],
    ['on time', AT, 0, 'run'],
    ['15 s late', AT + 15_000, 0, 'run'],
    ['16 s late: stale, as the reference', AT + 16_000, 0, 'stale'],
    ['5 min late, all of it a forward jump since the last cycle: runs', AT + 300_000, 298_000, 'run'],
    ['5 min late, a jump of 1 min since the last cycle: stale', AT + 300_000, 60_000, 'stale'],
    ['pushed ahead again by a backward jump: waits for its time', AT - 300_000, -300_000, 'wait'],
  ])('%s', (_description, now, wallJumpMs, due) => {
    expect(scheduledActionDue(AT, now, 10, wallJumpMs)).toBe(due);
  });
});
