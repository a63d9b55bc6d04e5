import { setTimeout as sleep } from 'node:timers/promises';
import { currentDcsBudget, DcsBudget, outsideDcsBudget, withinDcsBudget } from '../../src/dcs/dcs-budget';

describe('DcsBudget: the DCS time of one HA cycle', () => {
  // A hand-moved clock: Node's timers may fire up to a millisecond before performance.now() says they should.
  it('charges the time of every call, failed ones too, and never goes below zero', async () => {
    let nowMs = 0;
    const budget = new DcsBudget(100, () => nowMs);
    const callTaking = (ms: number, outcome: 'answered' | 'failed') => async () => {
      nowMs += ms;
      if (outcome === 'failed') throw new Error('etcd frozen');
    };
    await budget.charge(callTaking(30, 'answered'));
    await expect(budget.charge(callTaking(30, 'failed'))).rejects.toThrow('etcd frozen');
    nowMs += 500; // PostgreSQL work between calls is not DCS time
    expect(budget.remainingMs()).toBe(40);
    await budget.charge(callTaking(60, 'answered'));
    expect(budget.remainingMs()).toBe(0);
  });

  it('is the budget of whatever the cycle awaits, but not of a task the cycle starts to outlive it', async () => {
    const budget = new DcsBudget(1000);
    let seenInCycle: DcsBudget | undefined;
    let seenInTask: DcsBudget | undefined | 'not run' = 'not run';
    let task: Promise<void> = Promise.resolve();
    await withinDcsBudget(budget, async () => {
      await sleep(1);
      seenInCycle = currentDcsBudget();
      task = outsideDcsBudget(async () => {
        await sleep(1);
        seenInTask = currentDcsBudget();
      });
    });
    await task;
    expect(seenInCycle).toBe(budget);
    expect(seenInTask).toBeUndefined();
    expect(currentDcsBudget()).toBeUndefined();
  });

  it('keeps its budget for a call started in the cycle and still running after it, and applies again to the next cycle', async () => {
    const first = new DcsBudget(1000);
    let callStarted: Promise<DcsBudget | undefined> = Promise.resolve(undefined);
    await withinDcsBudget(first, async () => {
      // As EtcdDcs's calls do: the budget is read when the call starts, then the call waits.
      callStarted = (async () => {
        const taken = currentDcsBudget();
        await sleep(5);
        return taken;
      })();
    });
    expect(currentDcsBudget()).toBeUndefined();
    expect(await callStarted).toBe(first);
    const second = new DcsBudget(2000);
    const seen = await withinDcsBudget(second, async () => {
      await sleep(1);
      return currentDcsBudget();
    });
    expect(seen).toBe(second);
    expect(currentDcsBudget()).toBeUndefined();
  });
});
