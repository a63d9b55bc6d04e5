import { ActionKind } from './model-types';
import { FAULT_SCENARIOS } from './fault-scenarios';
import { ModelSettings, ReplicationMode } from './model';

/** n1's key runs out and n2 wins and promotes (the schedule of `a frozen leader through a failover`). */
const FOUR_LOOP_WAITS = 'loop_wait, loop_wait, loop_wait, loop_wait';

/**
 * Small searches that reach deep: each takes a few kinds of step only, so that breadth-first search
 * gets 8 to 16 steps down (a leader lost, its lease run out, the race run) where the search over
 * every kind stops at 3 or 4. One write, one fault (two agent freezes), one operator action, one
 * stale read at most; the targeted ones after them give what a single rule needs (issue 34): two
 * writes for a lag past maximum_lag_on_failover, a stale read decided on after the lease ran out, an
 * operator's request together with a fault, a primary that answers while its key is gone; and those
 * that start with a fixed schedule (schedule.ts) that sets a scene deeper than any search reaches.
 */
export interface MutationScenario {
  name: string;
  kinds: ActionKind[];
  faults?: number;
  operations?: number;
  staleReads?: number;
  writes?: number;
  states?: number;
  failsafe?: boolean;
  watchdog?: boolean;
  /** `synchronous_site_count`, with the members placed in sites (site-rule.ts). */
  siteRule?: number;
  /** The modes it runs in (all when absent). */
  modes?: ReplicationMode[];
  /** A fixed schedule taken first (schedule.ts); the search starts where it ends. Skipped when the mutant's decisions leave it. */
  schedule?: string;
  /** Settings fixed for the search (check_timeline, primary_start_timeout, a member tagged nosync): settings-rules.ts. */
  settings?: ModelSettings;
}

export const SCENARIOS: MutationScenario[] = [
  { name: 'two agents frozen', kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'agentFreeze'], faults: 2 },
  { name: 'leader cut from the DCS', kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'dcsCut'] },
  { name: 'a stale read', kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'read', 'dcsCut'], staleReads: 1 },
  { name: 'PostgreSQL crash', kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'pgCrash'] },
  { name: 'PostgreSQL hung', kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'pgHang'] },
  // Its agent dies and comes back after the key ran out: only the agent (or a fence) can end the hang then.
  {
    name: 'PostgreSQL hung, its agent back',
    kinds: ['cycle', 'tick', 'complete', 'pgHang', 'agentCrash', 'agentRestart'],
    faults: 2,
    writes: 0,
  },
  { name: 'agent crash', kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'agentCrash', 'agentRestart'] },
  {
    name: 'operator',
    kinds: [
      'cycle',
      'tick',
      'complete',
      'write',
      'ship',
      'agentFreeze',
      'switchover',
      'switchoverAny',
      'failover',
      'noFailover',
      'failoverPriority',
      'pause',
    ],
    operations: 1,
  },
  // The lag shows 12 steps down (two writes, one shipped, both other agents frozen, their keys run out): 30,000 states reach it.
  {
    name: 'two writes of lag',
    kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'agentFreeze'],
    faults: 2,
    writes: 2,
    states: 30_000,
  },
  {
    name: 'a stale read past the lease',
    kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'read', 'agentFreeze', 'agentRestart'],
    staleReads: 1,
  },
  {
    name: 'a request and a crash',
    kinds: [
      'cycle',
      'tick',
      'complete',
      'write',
      'ship',
      'agentCrash',
      'agentRestart',
      'pgCrash',
      'switchover',
      'switchoverAny',
      'failover',
    ],
    operations: 1,
  },
  {
    name: 'a request and a freeze',
    kinds: [
      'cycle',
      'tick',
      'complete',
      'ship',
      'agentFreeze',
      'agentRestart',
      'switchover',
      'switchoverAny',
      'failover',
      'noFailover',
    ],
    operations: 2,
    writes: 0,
  },
  {
    name: 'a primary without its key',
    kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'dcsCut', 'dcsHeal', 'pause', 'resume'],
    operations: 2,
  },
  ...FAULT_SCENARIOS,
  // Issue 34, part 3: the race among equals and the answers to requests, each given what its rule needs.
  // Both replicas hold the write and one is tagged failover_priority 2 when the leader's agent dies (invariant 2c).
  {
    name: 'failover_priority among equals',
    kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'agentCrash', 'failoverPriority'],
    operations: 1,
    states: 30_000,
  },
  // A switchover or failover asked for while the candidates lag two writes behind (invariant 10).
  {
    name: 'a request with lag',
    kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'switchover', 'switchoverAny', 'failover'],
    operations: 1,
    writes: 2,
  },
  // A manual failover or switchover to a member while paused: the candidate takes over nonetheless (invariant 6b).
  {
    name: 'a request while paused',
    kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'pause', 'switchover', 'failover'],
    operations: 2,
    states: 1_000,
  },
  // A switchover away from a leader tagged failover_priority 2: the race passes over the leader that stepped
  // down, whose equal WAL and higher priority would otherwise bar everybody (invariant 6b, 9 steps).
  {
    name: 'a switchover from a preferred leader',
    kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'switchoverAny', 'failoverPriority'],
    operations: 2,
    states: 3_000,
  },
  // Members in two sites with synchronous_site_count 1 (n1 and n2 in dc1, n3 in dc2): the planners' site rule (invariant 8),
  // and in strict mode the placeholder that holds commits while dc2 has no standby (invariant 7).
  {
    name: 'members in two sites',
    kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'agentFreeze'],
    siteRule: 1,
    modes: ['on', 'strict', 'quorum'],
  },
  // Quorum mode's vote count: the leader's agent frozen after a write one standby holds, the other tagged nofailover.
  {
    name: 'a frozen leader, a member nofailover',
    kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'agentFreeze', 'noFailover'],
    operations: 1,
  },
  // The old primary's race (issue 34, part 3): n1's agent frozen through a failover to n2 (PostgreSQL still a primary on
  // timeline 1), then n2's agent lost in turn; n1's agent is back while the key is free (invariant 14, invariant 1).
  {
    name: 'a frozen leader through a failover',
    kinds: ['cycle', 'tick', 'complete', 'agentRestart'],
    faults: 2,
    writes: 0,
    states: 1_000,
    modes: ['off', 'on'],
    schedule: `agentFreeze n1, ${FOUR_LOOP_WAITS}, agentCrash n2`,
  },
  // The same, paused once n2 promoted: n1's running primary takes the free key whatever its timeline (invariant 11b).
  {
    name: 'a frozen leader through a failover, then paused',
    kinds: ['cycle', 'tick', 'complete', 'agentRestart'],
    faults: 2,
    operations: 1,
    writes: 0,
    states: 1_000,
    modes: ['off'],
    schedule: `agentFreeze n1, ${FOUR_LOOP_WAITS}, pause, agentCrash n2`,
  },
  // Quorum mode's vote of a member ahead: n1, tagged nofailover, writes a commit only n3 acknowledges; n3's agent dies
  // and n1 is cut from the DCS (it demotes) then healed: n1, the former /sync leader, answers n2's race from ahead and
  // must not count as a vote for n2, which lacks the commit (invariant 3).
  {
    name: 'a nofailover leader ahead, cut off and back',
    kinds: ['cycle', 'tick', 'complete'],
    faults: 2,
    operations: 1,
    writes: 1,
    states: 1_000,
    modes: ['quorum'],
    schedule: `noFailover n1, loop_wait, write n1, ship n3, loop_wait, agentCrash n3, dcsCut n1, ${FOUR_LOOP_WAITS}, dcsHeal n1`,
  },
  // Strict mode turned off (synchronous_standby_names emptied) and on again while no standby streams: the leader must
  // write the placeholder that holds commits rather than keep the empty setting (invariant 7).
  {
    name: 'strict mode back on without a standby',
    kinds: ['cycle', 'tick', 'complete'],
    faults: 2,
    operations: 2,
    writes: 0,
    states: 200,
    modes: ['strict'],
    schedule: `syncMode, loop_wait, loop_wait, agentFreeze n2, agentFreeze n3, ${FOUR_LOOP_WAITS}, syncMode`,
  },
  // A stale read decided on once the lease ran out, without writes: 10 steps deep, within 2,000 states.
  {
    name: 'a stale read past the lease, no writes',
    kinds: ['cycle', 'tick', 'complete', 'read', 'agentFreeze', 'agentRestart'],
    staleReads: 1,
    writes: 0,
    states: 2_000,
  },
  // A promotion interrupted: a replica takes the key, its agent dies before it promotes, and it comes back
  // paused (invariant 11; 12 steps, within 5,000 states) or tagged nofailover (it must hand the key on; 13 steps).
  {
    name: 'an interrupted promotion, paused',
    kinds: ['cycle', 'tick', 'complete', 'pause', 'pgCrash', 'agentCrash', 'agentRestart'],
    faults: 2,
    operations: 1,
    writes: 0,
    states: 5_000,
  },
  {
    name: 'an interrupted promotion, nofailover',
    kinds: ['cycle', 'tick', 'complete', 'noFailover', 'agentCrash', 'agentRestart'],
    faults: 2,
    operations: 1,
    writes: 0,
    states: 3_000,
  },
  // Issue 34, part 3: the settings the rules read, each turned on by a scenario of its own (settings-rules.ts).
  // check_timeline: n2 promoted (timeline 2) while n1's agent was frozen, and n3, which shipped nothing since, is still on
  // timeline 1; n2's agent dies: n3 must not win the race from the old timeline (invariant 14b).
  {
    name: 'check_timeline, the new leader lost',
    kinds: ['cycle', 'tick', 'complete'],
    faults: 2,
    writes: 0,
    states: 500,
    modes: ['off'],
    schedule: `agentFreeze n1, ${FOUR_LOOP_WAITS}, agentCrash n2`,
    settings: { checkTimeline: true },
  },
  // The same scene, n2 running: a switchover to n3, still on timeline 1; n2 must not hand it the cluster (invariant 14b).
  {
    name: 'check_timeline, a switchover to the old timeline',
    kinds: ['cycle', 'tick', 'complete', 'switchover'],
    faults: 1,
    operations: 1,
    writes: 0,
    states: 500,
    modes: ['off'],
    schedule: `agentFreeze n1, ${FOUR_LOOP_WAITS}`,
    settings: { checkTimeline: true },
  },
  // primary_start_timeout 0: the leader's PostgreSQL crashes; it must hand the key on rather than hold it and wait
  // for a start it never tries: where the schedule ends is judged for settling (invariant 6).
  {
    name: 'primary_start_timeout 0, the primary crashed',
    kinds: ['cycle', 'tick', 'complete'],
    writes: 0,
    states: 200,
    schedule: 'pgCrash n1',
    settings: { primaryStartTimeout: 0 },
  },
  // n3 tagged nosync: never listed in /sync nor in synchronous_standby_names (invariant 8b).
  {
    name: 'a member tagged nosync',
    kinds: ['cycle', 'tick', 'complete', 'ship', 'agentFreeze'],
    writes: 0,
    states: 500,
    modes: ['on', 'strict', 'quorum'],
    settings: { noSync: 2 },
  },
  // Sites in the race (issue 36): n1 and n2 in dc1, n3 in dc2, `/status` current_site dc1; n1's agent dies after a write
  // both replicas hold: n3 must defer to n2, as far along in the current site (invariant 2d; asynchronous mode).
  {
    name: 'a leader lost, members in two sites',
    kinds: ['cycle', 'tick', 'complete'],
    faults: 1,
    writes: 1,
    states: 1_000,
    siteRule: 1,
    modes: ['off'],
    schedule: 'write n1, ship n2, ship n3, agentCrash n1',
  },
  // A switchover to n2, whose watchdog (mode required) cannot be activated: the leader must refuse it rather than step
  // down for a candidate the race bars (invariant 10, which counts such a member as no candidate, as invariant 13).
  {
    name: 'a switchover to a member whose watchdog failed',
    kinds: ['cycle', 'tick', 'complete', 'watchdogFail', 'switchover', 'switchoverAny'],
    operations: 1,
    writes: 0,
    states: 1_000,
    watchdog: true,
    modes: ['off'],
  },
  // Quorum mode with synchronous_mode_strict (strictQuorum): turned off and on again while no standby streams, the
  // leader must hold commits (`ANY 1` over the placeholder) rather than keep the emptied setting (invariant 7)...
  {
    name: 'strict quorum mode back on without a standby',
    kinds: ['cycle', 'tick', 'complete'],
    faults: 2,
    operations: 2,
    writes: 0,
    states: 200,
    modes: ['quorum'],
    schedule: `syncMode, loop_wait, loop_wait, agentFreeze n2, agentFreeze n3, ${FOUR_LOOP_WAITS}, syncMode`,
    settings: { strictQuorum: true },
  },
  // ...and with members in two sites, synchronous_site_count 1: while dc2 has no standby, every commit waits for the
  // placeholder too (invariant 8, strict).
  {
    name: 'members in two sites, strict quorum',
    kinds: ['cycle', 'tick', 'complete', 'write', 'ship', 'agentFreeze'],
    states: 1_000,
    siteRule: 1,
    modes: ['quorum'],
    settings: { strictQuorum: true },
  },
  // synchronous_commit's columns (commit-columns.ts): a standby writes, flushes and replays in steps. n1 commits a write
  // n2 (in /sync) acknowledges; n3 has only written it (`on`) or not yet replayed it (`remote_apply`) when n2's agent
  // stalls and its key runs out: n3 may take n2's place in /sync only once it holds the commit in the column the
  // setting waits for (invariant 3 for `on`, 3c for `remote_apply`).
  {
    name: 'synchronous_commit on, a standby written ahead of its flush',
    kinds: ['cycle', 'tick', 'complete', 'ship'],
    faults: 1,
    writes: 1,
    states: 3_000,
    modes: ['on', 'strict'],
    schedule: 'write n1, ship n2, ship n2, ship n3, agentFreeze n2',
    settings: { synchronousCommit: 'on' },
  },
  {
    name: 'synchronous_commit remote_apply, a standby flushed ahead of its replay',
    kinds: ['cycle', 'tick', 'complete', 'ship'],
    faults: 1,
    writes: 1,
    states: 3_000,
    modes: ['on', 'strict'],
    schedule: 'write n1, ship n2, ship n2, ship n2, ship n3, ship n3, agentFreeze n2',
    settings: { synchronousCommit: 'remote_apply' },
  },
  // A switchover to a site (members in two sites: n1 and n2 in dc1, n3 in dc2): a switchover to dc2 while n3 cannot
  // take over (its agent stalled) must be refused, not answered by stepping down for n2 (invariant 10).
  {
    name: 'a switchover to a site none of whose members can take over',
    kinds: ['cycle', 'tick', 'complete', 'ship', 'agentFreeze', 'switchoverAny'],
    operations: 1,
    writes: 0,
    states: 3_000,
    siteRule: 1,
    modes: ['off', 'on'],
    settings: { switchoverSite: 'dc2' },
  },
  // Failsafe mode, a member /failsafe leaves out: n3's agent dies and its key runs out, so n1's /failsafe names n1 and
  // n2 only; n3 is back and reads it, then n1 is cut from the DCS (it holds as failsafe leader, n2 accepting its calls)
  // and n3 from its peers: n3, which n1 never asks, must not race beside the primary it cannot reach (invariant 1).
  {
    name: 'failsafe, a member /failsafe leaves out cut off from the leader',
    kinds: ['cycle', 'tick', 'complete'],
    faults: 3,
    writes: 0,
    states: 1_000,
    failsafe: true,
    modes: ['off', 'quorum'],
    schedule: `agentCrash n3, ${FOUR_LOOP_WAITS}, agentRestart n3, loop_wait, dcsCut n1, peerCut n3`,
  },
  // A standby cluster (standby_cluster names a remote primary): the leader, a primary when the setting comes, must turn
  // into the standby leader; no member may run as a primary (invariant 15), through a crash and a restart.
  {
    name: 'a standby cluster',
    kinds: ['cycle', 'tick', 'complete', 'ship', 'agentCrash', 'agentRestart', 'pgCrash'],
    faults: 1,
    writes: 0,
    states: 3_000,
    modes: ['off'],
    settings: { standbyCluster: true },
  },
];
