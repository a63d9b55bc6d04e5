import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { QuorumTransition } from '../ha/sync/quorum-resolver';
import { sourceRoot } from './mutant-loader';
import { Violation } from './model-types';
import type { ResolveQuorum } from './quorum-resolver-check';

/**
 * 12b. The quorum resolver answers as the reference's (Patroni 4.1.4's `patroni/quorum.py`) wherever the reference
 * answers. Invariant 12 judges where the resolver's steps lead; this judges the way, which users see in `/sync` and
 * synchronous_standby_names: an equally safe but different way is still a change of behaviour.
 *
 * The reference's answers were recorded by running its own module on every small state of invariant 12 (this node
 * n1, standbys n2..n4, takeovers from n0; `scripts/oracle/record-quorum-transitions.py`): 94,224 states, of which
 * it answers 74,964. Where it raises instead (QuorumError on 18,315 states, its own assertions on 945), the
 * resolver refuses too when the state was unsafe to begin with (2,016) and otherwise deliberately takes the safe
 * way round (quorum-resolver.ts); only invariant 12 judges those. The
 * resolver runs as the reference does there, taking its guess of the confirmed count (`confirmedMeasured` false);
 * the agent measures it, a deviation of its own.
 */
const REFERENCE_FILE = join('model-check', 'reference', 'patroni-4.1.4-quorum-transitions.tsv.gz');

/** The recorded lines: `leader quorum voters numsync sync confirmed active syncWanted\tanswer`. */
let recorded: string[] | null = null;
function referenceLines(): string[] {
  recorded ??= gunzipSync(readFileSync(join(sourceRoot(), REFERENCE_FILE)))
    .toString()
    .split('\n')
    .filter(Boolean);
  return recorded;
}

const namesOf = (list: string) => (list === '-' ? [] : list.split(','));
const listed = (names: readonly string[]) => [...names].sort().join(',') || '-';

/** A step as the recording writes it. */
function stepText(step: QuorumTransition): string {
  if (step.kind === 'dcs') return `quorum ${step.leader} ${step.quorum} ${listed(step.voters)}`;
  if (step.kind === 'ssn') return `sync ${step.numsync} ${listed(step.sync)}`;
  return 'restart';
}

/** The first recorded state where `resolve` answers other than the reference, or null. */
export function checkAgainstReference(resolve: ResolveQuorum): Violation | null {
  for (const line of referenceLines()) {
    const [state, expected] = line.split('\t');
    if (expected === 'error' || expected === 'assert') continue;
    const [leader, quorum, voters, numsync, sync, confirmed, active, syncWanted] = state.split(' ');
    let answer: string;
    try {
      answer = resolve({
        leader,
        quorum: Number(quorum),
        voters: namesOf(voters),
        numsync: Number(numsync),
        sync: namesOf(sync),
        numsyncConfirmed: Number(confirmed),
        confirmedMeasured: false,
        active: namesOf(active),
        syncWanted: Number(syncWanted),
        leaderWanted: 'n1',
      })
        .map(stepText)
        .join('; ');
    } catch (error) {
      answer = `an error (${(error as Error).message})`;
    }
    if (answer !== expected.split(';').join('; ')) {
      return {
        invariant: 'quorum-reference',
        message: `from /sync ${leader} quorum ${quorum} of (${voters}), ANY ${numsync} (${sync}), confirmed ${confirmed}, streaming (${active}), synchronous_node_count ${syncWanted}: the reference answers "${expected.split(';').join('; ') || 'nothing'}", the resolver "${answer || 'nothing'}"`,
      };
    }
  }
  return null;
}

/** How many recorded states the reference answers (the rest it refuses). */
export function referenceAnswered(): number {
  return referenceLines().filter((line) => !/\t(error|assert)$/.test(line)).length;
}
