import { ActionKind, Bounds, DecisionMutation } from '../../../src/model-check/model-types';
import { ReplicationMode } from '../../../src/model-check/model';
import { BROKEN_VARIANTS } from '../../../src/model-check/mutations';
import { breadthFirst } from '../../../src/model-check/search';

const kinds: ActionKind[] = ['cycle', 'tick', 'complete', 'write', 'ship', 'agentCrash', 'failoverPriority'];
const bounds = (mode: ReplicationMode): Bounds => ({
  faults: 1,
  operations: 1,
  writes: 1,
  staleReads: 0,
  kinds: new Set(kinds),
  modes: [mode],
});
const search = (mode: ReplicationMode, mutation?: DecisionMutation) =>
  breadthFirst({ mode, bounds: bounds(mode), maxDepth: 20, maxStates: 30_000, progressEvery: 0, mutation });

describe('invariant 2c: among members as far along, the race elects the higher failover_priority', () => {
  it('the broken variant (the race reads no failover_priority) is caught: n2 tagged 2, n3 wins at the same position', () => {
    const report = search('off', BROKEN_VARIANTS.priority);
    expect(report.violation?.invariant).toBe('priority');
    expect(report.violation!.message).toMatch(
      /^n3 \(failover_priority 1\) won the leader race at 1\/1 although n2, reachable at the same position, has failover_priority 2$/,
    );
    // n1's agent dies, n2 is tagged failover_priority 2, both replicas hold the write: n3 must let n2 win.
    expect(report.violation!.path.map((a) => a.label)).toEqual([
      'write n1',
      'agentCrash n1',
      'cycle n2',
      'ship n2',
      'failoverPriority n2',
      'cycle n3',
      'tick',
      'cycle n2',
      'cycle n3',
      'ship n3',
      'tick',
      'cycle n3',
    ]);
  });

  it.each(['off', 'on', 'quorum'] as const)('the real race keeps it (%s mode)', (mode) => {
    const report = search(mode);
    expect(report.violation).toBeNull();
    // Not a trivial search (with the symmetry reduction the asynchronous one ends at 2,925 states, before its 30,000).
    expect(report.states).toBeGreaterThan(2_500);
  });
});
