import { setTimeout as sleep } from 'node:timers/promises';
import { currentDcsBudget, DcsBudget, outsideDcsBudget, withinDcsBudget } from '../../src/dcs/dcs-budget';

describe('DcsBudget: the DCS time of one HA cycle', () => {
  it('charges the time of every call, failed ones too, and never goes below zero', async () => {
    const budget = new DcsBudget(100);
    await budget.charge(() => sleep(30));
    await expect(budget.charge(() => sleep(30).then(() => Promise.reject(new Error('etcd frozen'))))).rejects.toThrow('etcd frozen');
    expect(budget.remainingMs()).toBeLessThanOrEqual(40);
    await budget.charge(() => sleep(60));
    expect(budget.remainingMs()).toBe(0);
  });

  it("is the budget of whatever the cycle awaits, but not of a task the cycle starts to outlive it", async () => {
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
});
