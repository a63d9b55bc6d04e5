import { retryTransient } from '../../../src/dcs/etcd/etcd-retry';
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
