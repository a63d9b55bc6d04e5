import { Backoff } from '../../src/common/backoff';

describe('Backoff', () => {
  it('pauses 100 ms, then twice as long each time, at most 1 s', () => {
    const backoff = new Backoff();
    expect(Array.from({ length: 6 }, () => backoff.next())).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it('starts again from the first pause after a success', () => {
    const backoff = new Backoff(50, 300);
    backoff.next();
    backoff.next();
    backoff.reset();
    expect([backoff.next(), backoff.next(), backoff.next(), backoff.next()]).toEqual([50, 100, 200, 300]);
  });
});
