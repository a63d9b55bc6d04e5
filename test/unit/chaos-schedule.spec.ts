import { faultsNamed, schedule } from '../../scripts/lib/chaos/run';

/** Which faults a run of `npm run chaos` injects: the opt-in one (a documented exception) only when named. */
describe('the chaos schedule', () => {
  const exception = 'kill -9 of the leader fence and agent, the agent back after ttl + 5 s';
  const fenceFaults = ['kill -9 of the leader fence', 'kill -9 of the leader fence and agent', 'kill -9 of a replica fence', 'kill -9 of a replica fence and agent'];

  it('holds the four fence faults by default, never the opt-in exception', () => {
    const names = faultsNamed().map((fault) => fault.name);
    expect(names).toEqual(expect.arrayContaining(fenceFaults));
    expect(names).not.toContain(exception);
    expect(schedule(1, 40, faultsNamed()).map((fault) => fault.name)).not.toContain(exception);
  });

  it('runs the exception when it is named, and only the faults named', () => {
    expect(faultsNamed([exception, 'switchover']).map((fault) => fault.name)).toEqual(['switchover', exception]);
    expect(new Set(schedule(2, 4, faultsNamed(fenceFaults)).map((fault) => fault.name))).toEqual(new Set(fenceFaults));
  });
});
