import type { QuorumState, QuorumTransition } from '../ha/sync/quorum-resolver';
import { Violation } from './model-types';

/**
 * 12. The quorum resolver from every small state (issue 34, part 3). The three-node model, with
 * synchronous_node_count 1, never hands the resolver most of its phases (a replication factor change, a change
 * interrupted halfway, several standbys gone at once, a takeover whose former leader is still listed), so its
 * branches there are judged on the resolver itself: every state of up to three standbys (each subset as voters,
 * as synchronous_standby_names' members and as the streaming ones, every quorum, count and confirmed number,
 * synchronous_node_count 1 to 3), safe to begin with or right after a failover, is run as the agent runs it,
 * one cycle after another, the listed standbys that stream catching up in between. What a user would notice:
 * - no step passes through a state that could lose an acknowledged commit: with voters, every set of `numsync`
 *   listed standbys meets every `quorum` of voters (|voters ∪ sync| <= quorum + numsync, counting the leader on
 *   each side as the resolver's own rule does) and one set lies within the other;
 * - it never gives up (an error every loop_wait, as the reference's exception) on such a state;
 * - within four cycles it reaches the optimal setting: `/sync` leader this node, its standbys and
 *   synchronous_standby_names' members both the streaming standbys, `ANY min(synchronous_node_count, streaming)`,
 *   quorum the rest; and stays there (one more cycle changes nothing).
 * The first state that breaks one is the violation.
 */
export type ResolveQuorum = (state: QuorumState) => QuorumTransition[];

const POOL = ['n2', 'n3', 'n4'];
const ME = 'n1';
const FORMER = 'n0';
const CYCLES = 4;

function subsets<T>(items: readonly T[]): T[][] {
  return items.reduce<T[][]>((all, item) => [...all, ...all.map((s) => [...s, item])], [[]]);
}

interface Working {
  leader: string;
  quorum: number;
  voters: string[];
  numsync: number;
  sync: string[];
  confirmed: number;
}

/** The resolver's safety rule, restated: any acknowledging set meets any electing set. */
function unsafe(w: Working): string | null {
  if (w.voters.length === 0) return null;
  const voters = new Set([...w.voters, w.leader]);
  const sync = new Set([...w.sync, ME]);
  const nodes = new Set([...voters, ...sync]).size;
  if (nodes > w.quorum + Math.min(w.numsync, w.sync.length) + 1)
    return `quorum ${w.quorum} and ANY ${w.numsync} need not overlap among ${nodes} nodes`;
  const within = (a: Set<string>, b: Set<string>) => [...a].every((x) => b.has(x));
  if (within(voters, sync) || within(sync, voters)) return null;
  return 'neither the voters nor the synchronous standbys lie within the other';
}

const shown = (w: Working) =>
  `/sync ${w.leader} quorum ${w.quorum} of (${[...w.voters].sort().join(', ')}), ANY ${w.numsync} (${[...w.sync].sort().join(', ')})`;
const same = (a: string[], b: string[]) => a.length === b.length && a.every((x) => b.includes(x));

/** Runs the resolver from one state, cycle after cycle; the first rule broken, or null. */
export function resolveFrom(
  resolve: ResolveQuorum,
  start: Working,
  active: string[],
  syncWanted: number,
): string | null {
  const w: Working = { ...start, voters: [...start.voters], sync: [...start.sync] };
  const from = `from ${shown(start)}, confirmed ${start.confirmed}, streaming (${active.join(', ')}), synchronous_node_count ${syncWanted}`;
  let quiet = 0;
  for (let cycle = 0; cycle <= CYCLES && quiet < 2; cycle++) {
    let steps: QuorumTransition[];
    try {
      steps = resolve({
        leader: w.leader,
        quorum: w.quorum,
        voters: w.voters,
        numsync: w.numsync,
        sync: w.sync,
        numsyncConfirmed: w.confirmed,
        confirmedMeasured: true,
        active,
        syncWanted,
        leaderWanted: ME,
      });
    } catch (error) {
      return `the resolver gives up ${from} at ${shown(w)}: ${(error as Error).message}`;
    }
    quiet = steps.length === 0 ? quiet + 1 : 0;
    for (const step of steps) {
      if (step.kind === 'restart') break;
      if (step.kind === 'dcs') [w.leader, w.quorum, w.voters] = [step.leader, step.quorum, [...step.voters]];
      else [w.numsync, w.sync] = [step.numsync, [...step.sync]];
      const why = unsafe(w);
      if (why) return `a step ${from} reaches ${shown(w)}: ${why}`;
    }
    // Between cycles the listed standbys that stream catch up with the primary.
    w.confirmed = Math.min(w.numsync, w.sync.filter((name) => active.includes(name)).length);
  }
  const numsync = Math.min(syncWanted, active.length);
  const optimal =
    w.leader === ME &&
    same(w.sync, active) &&
    w.numsync === numsync &&
    (active.length === 0
      ? w.voters.length === 0 && w.quorum === 0
      : same(w.voters, active) && w.quorum === active.length - numsync);
  if (quiet < 2 || !optimal)
    return `${from} the resolver ${quiet < 2 ? 'is still changing' : 'settles'} at ${shown(w)} after ${CYCLES} cycles, not at the optimal setting`;
  return null;
}

/**
 * Every small starting state: the leader's own, safe ones, and takeovers from FORMER (whatever they hold).
 * `domain` narrows it (the unit tests' CI bound): no takeovers, synchronous_node_count up to `maxSyncWanted`.
 */
export function checkQuorumResolver(
  resolve: ResolveQuorum,
  domain: { takeovers: boolean; maxSyncWanted: number } = { takeovers: true, maxSyncWanted: POOL.length },
): Violation | null {
  for (const takeover of domain.takeovers ? [false, true] : [false]) {
    const pool = takeover ? [FORMER, ...POOL] : POOL;
    const voterPool = takeover ? [ME, ...POOL] : POOL;
    for (const voters of subsets(voterPool))
      for (const sync of subsets(pool))
        for (const active of subsets(POOL))
          for (let quorum = 0; quorum <= Math.max(0, voters.length - 1); quorum++)
            for (let numsync = 0; numsync <= sync.length; numsync++)
              for (let confirmed = 0; confirmed <= numsync; confirmed++)
                for (let syncWanted = 1; syncWanted <= domain.maxSyncWanted; syncWanted++) {
                  const start: Working = { leader: takeover ? FORMER : ME, quorum, voters, numsync, sync, confirmed };
                  if (!takeover && unsafe(start)) continue;
                  const broken = resolveFrom(resolve, start, active, syncWanted);
                  if (broken) return { invariant: 'quorum-resolver', message: broken };
                }
  }
  return null;
}
