import { DcsBudget } from '../../../src/dcs/dcs-budget';
import { cycleAllowanceMs, retryTransient } from '../../../src/dcs/etcd/etcd-retry';
import { EtcdNoAnswerError, EtcdUnavailableError } from '../../../src/dcs/etcd/etcd-types';

const hooks = { leaseLost: () => undefined, closed: () => false };

describe('retryTransient gives up naming why', () => {
  it('names the refusal when the last try, on what was left of the deadline, only ran out of time', async () => {
    let tries = 0;
    const attempt = () => {
      tries++;
      return Promise.reject(
        tries === 1
          ? new EtcdUnavailableError('no etcd host reachable (https://127.0.0.1:2379): certificate required')
          : new EtcdNoAnswerError('etcd /v3/kv/range: no answer within 19 ms'),
      );
    };
    await expect(retryTransient(150, 'read cluster', attempt, hooks)).rejects.toThrow(
      'read cluster: failed within 150 ms: no etcd host reachable (https://127.0.0.1:2379): certificate required (the last try: etcd /v3/kv/range: no answer within 19 ms)',
    );
  });

  it('says the deadline passed when nothing answered at all', async () => {
    const attempt = () => Promise.reject(new EtcdNoAnswerError('etcd /v3/kv/range: no answer within 50 ms'));
    await expect(retryTransient(150, 'read cluster', attempt, hooks)).rejects.toThrow(
      /^read cluster: failed within 150 ms: etcd \/v3\/kv\/range: no answer within 50 ms$/,
    );
  });
});

describe('cycleAllowanceMs: what a call within an HA cycle may wait (retry_timeout 4 s)', () => {
  /** A cycle's budget of 4 s that already waited `spentMs` on etcd. */
  const budgetAfter = async (spentMs: number) => {
    let now = 0;
    const budget = new DcsBudget(4000, () => now);
    await budget.charge(async () => {
      now += spentMs;
    });
    return budget;
  };

  it.each([
    // spent, etcd's last answer, essential, allowed or refused
    [0, 0, false, 4000],
    [0, 9000, false, 4000], // a cycle's first call always goes, however slow etcd was
    [2500, 1000, false, 1500],
    [2500, 2000, false, "not sent, 1500 ms left of this HA cycle's retry_timeout and etcd's last answer took 2000 ms"],
    [2500, 2000, true, 1500], // the read, the lock, the lease: tried with what is left
    [3990, 0, true, 'not sent, this HA cycle already waited its retry_timeout (4000 ms) for the DCS'],
  ] as const)(
    'spent %i ms, last answer %i ms, essential %s: %s',
    async (spentMs, lastAnswerMs, essential, expected) => {
      const budget = await budgetAfter(spentMs);
      const allowance = () => cycleAllowanceMs('write status', budget, 4000, lastAnswerMs, essential);
      if (typeof expected === 'number') expect(allowance()).toBe(expected);
      else expect(allowance).toThrow(`write status: ${expected}`);
    },
  );
});
