import { NETWORK_FAULTS } from '../../scripts/lib/chaos/network-faults';
import { chooseBed, faultsNamed, schedule, splitFaultList } from '../../scripts/lib/chaos/run';

/** Which faults a run of `npm run chaos` injects: the opt-in one (a documented exception) only when named. */
describe('the chaos schedule', () => {
  const exception = 'kill -9 of the leader fence and agent with the agent back after ttl + 5 s';
  const fenceFaults = [
    'kill -9 of the leader fence',
    'kill -9 of the leader fence and agent',
    'kill -9 of a replica fence',
    'kill -9 of a replica fence and agent',
  ];

  it('holds the four fence faults by default, never the opt-in exception', () => {
    const names = faultsNamed().map((fault) => fault.name);
    expect(names).toEqual(expect.arrayContaining(fenceFaults));
    expect(names).not.toContain(exception);
    expect(schedule(1, 40, faultsNamed()).map((fault) => fault.name)).not.toContain(exception);
  });

  it("reads `--faults`' comma-separated list, names with a comma in them included", () => {
    const everyName = [...faultsNamed(), ...faultsNamed([exception])].map((fault) => fault.name);
    expect(splitFaultList(everyName.join(','))).toEqual(everyName);
    expect(splitFaultList('power cut of the whole cluster, etcd included,switchover')).toEqual([
      'power cut of the whole cluster, etcd included',
      'switchover',
    ]);
    expect(splitFaultList('switchover, no such fault')).toEqual(['switchover', 'no such fault']);
  });

  it('runs the exception when it is named, and only the faults named', () => {
    expect(faultsNamed([exception, 'switchover']).map((fault) => fault.name)).toEqual(['switchover', exception]);
    expect(new Set(schedule(2, 4, faultsNamed(fenceFaults)).map((fault) => fault.name))).toEqual(new Set(fenceFaults));
  });

  it('holds the network faults in the netns bed only: out of the loopback default, and a named one picks the netns bed', () => {
    const network = NETWORK_FAULTS.map((fault) => fault.name);
    expect(network).toHaveLength(10);
    expect(network).toContain("retry_timeout + 1 s one-way delay on a replica's cluster link for ttl + 10 s");
    expect(faultsNamed().map((fault) => fault.name)).not.toEqual(expect.arrayContaining([network[0]]));
    expect(faultsNamed(undefined, 'netns').map((fault) => fault.name)).toEqual(expect.arrayContaining(network));
    expect(splitFaultList(network.join(','))).toEqual(network);
    expect(chooseBed(undefined, ['switchover'])).toBe('loopback');
    expect(chooseBed(undefined)).toBe('loopback');
    expect(() => chooseBed('loopback', ['switchover', network[3]])).toThrow('network faults run only in the netns bed');
  });
});
