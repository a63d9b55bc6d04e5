import { quorumTransitions } from '../../../src/ha/sync/quorum-resolver';
import { loadDecisionCode } from '../../../src/model-check/mutant-loader';
import { decisionMutants } from '../../../src/model-check/mutants';
import { BROKEN_VARIANTS } from '../../../src/model-check/mutations';
import { checkQuorumResolver, resolveFrom } from '../../../src/model-check/quorum-resolver-check';
import { checkAgainstReference, referenceAnswered } from '../../../src/model-check/quorum-reference';

/** Invariant 12 (the quorum resolver from every small state), within the CI bound: no takeovers, synchronous_node_count 1 and 2. */
const domain = { takeovers: false, maxSyncWanted: 2 };

describe('invariant 12: the quorum resolver from every small state', () => {
  it('the real resolver reaches the optimal setting through safe states from every one', () => {
    expect(checkQuorumResolver(quorumTransitions, domain)).toBeNull();
  });

  it('from a change interrupted halfway (ANY 2 (n2, n3) set, n3 alone voting) it settles on ANY 1 (n2, n3), quorum 1', () => {
    const start = { leader: 'n1', quorum: 0, voters: ['n3'], numsync: 2, sync: ['n2', 'n3'], confirmed: 2 };
    expect(resolveFrom(quorumTransitions, start, ['n2', 'n3'], 1)).toBeNull();
  });

  it('a resolver that changes nothing is caught at the first state with a streaming standby', () => {
    expect(checkQuorumResolver(BROKEN_VARIANTS['quorum-resolver'].code!.quorumTransitions, domain)?.message).toBe(
      'from /sync n1 quorum 0 of (), ANY 0 (), confirmed 0, streaming (n2), synchronous_node_count 1 the resolver settles at /sync n1 quorum 0 of (), ANY 0 () after 4 cycles, not at the optimal setting',
    );
  });

  it('a mutant the three-node model cannot catch is caught here: a replication factor lowered too soon', () => {
    const m = decisionMutants(['ha/sync/quorum-resolver.ts']).find(
      (x) =>
        x.id === 'ha/sync/quorum-resolver.ts finishInterruptedChange: invert if (this.numsync > this.state.syncWanted)',
    )!;
    const code = loadDecisionCode(new Map([[m.file, m.source]]));
    expect(checkQuorumResolver(code.quorumTransitions, domain)?.message).toMatch(
      /^from \/sync n1 quorum 0 of \(\), ANY 1 \(n2\)/,
    );
  });
});

describe("invariant 12b: the quorum resolver answers as the reference's wherever the reference answers", () => {
  it('the real resolver gives the recorded answer of Patroni 4.1.4 on all 74,964 states the reference answers', () => {
    expect(referenceAnswered()).toBe(74_964);
    expect(checkAgainstReference(quorumTransitions)).toBeNull();
  });

  it('a resolver that makes its first two writes in the opposite order is caught', () => {
    expect(checkAgainstReference(BROKEN_VARIANTS['quorum-reference'].code!.quorumTransitions)?.message).toBe(
      'from /sync n1 quorum 0 of (-), ANY 1 (n2), confirmed 1, streaming (n3), synchronous_node_count 1: the reference answers "sync 1 n3; quorum n1 0 n3", the resolver "quorum n1 0 n3; sync 1 n3"',
    );
  });
});
