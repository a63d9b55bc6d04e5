"""Records what Patroni's own quorum resolver (patroni/quorum.py) answers from every small state.

Usage: python3 scripts/oracle/record-quorum-transitions.py <patroni source tree> > test/fixtures/oracle/<file>

The states are those of Stator's resolver check (src/model-check/quorum-resolver-check.ts): this node n1, standbys
n2..n4, and takeovers from a former leader n0. One line per state, tab-separated:
  leader quorum voters numsync sync confirmed active sync_wanted <TAB> transitions
where sets are comma-joined sorted names ('-' when empty) and transitions are ';'-joined steps
  'quorum <leader> <quorum> <voters>' | 'sync <numsync> <names>' | 'restart'; 'error' when the resolver raises
  QuorumError, 'assert' when one of its assertions fails.
The fixture is the reference's output, not its code: Stator's unit test compares its resolver with it.
"""
import itertools
import logging
import sys

sys.path.insert(0, sys.argv[1])
from patroni.quorum import QuorumError, QuorumStateResolver  # noqa: E402

POOL = ['n2', 'n3', 'n4']
ME = 'n1'
FORMER = 'n0'


def subsets(items):
    return [list(c) for r in range(len(items) + 1) for c in itertools.combinations(items, r)]


def names(items):
    return ','.join(sorted(str(x) for x in items)) or '-'


def step(t):
    if t.transition_type == 'quorum':
        return f'quorum {t.leader} {t.num} {names(t.names)}'
    if t.transition_type == 'sync':
        return f'sync {t.num} {names(t.names)}'
    return 'restart'


def main():
    logging.disable(logging.CRITICAL)  # the resolver logs every state it refuses
    out = sys.stdout
    for takeover in (False, True):
        pool = [FORMER] + POOL if takeover else POOL
        voter_pool = [ME] + POOL if takeover else POOL
        leader = FORMER if takeover else ME
        for voters in subsets(voter_pool):
            for sync in subsets(pool):
                for active in subsets(POOL):
                    for quorum in range(max(0, len(voters) - 1) + 1):
                        for numsync in range(len(sync) + 1):
                            for confirmed in range(numsync + 1):
                                for sync_wanted in range(1, len(POOL) + 1):
                                    resolver = QuorumStateResolver(leader, quorum, voters, numsync, sync, confirmed,
                                                                   active, sync_wanted, ME)
                                    try:
                                        answer = ';'.join(step(t) for t in resolver)
                                    except QuorumError:
                                        answer = 'error'
                                    except AssertionError:  # a state its own assertions rule out
                                        answer = 'assert'
                                    key = ' '.join([leader, str(quorum), names(voters), str(numsync), names(sync),
                                                    str(confirmed), names(active), str(sync_wanted)])
                                    out.write(f'{key}\t{answer}\n')


if __name__ == '__main__':
    main()
