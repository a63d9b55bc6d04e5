import { nextReadyProbeMs } from '../../../src/postgresql/process/ready-probe';

describe('nextReadyProbeMs: how long the next readiness probe of a starting server may take', () => {
  it.each([
    // current deadline, how long the probe took, next deadline
    [1000, 30, 1000], // answered ("starting up", or refused): the server answers fast, keep polling fast
    [1000, 980, 2000], // ran into its deadline: a crowded host forks a backend slowly
    [2000, 2001, 4000],
    [4000, 4000, 8000],
    [8000, 8000, 8000], // never more than 8 s
  ])('deadline %i ms, took %i ms: next %i ms', (current, took, next) => {
    expect(nextReadyProbeMs(current, took)).toBe(next);
  });
});
