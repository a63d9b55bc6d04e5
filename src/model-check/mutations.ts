import { DecisionMutation, InvariantId } from './model-types';
import { REAL_DECISION_CODE } from './decision-code';
import { GUESSING_CONFIRMED } from './quorum-gap-variant';
import { IGNORING_SITES } from './site-rule-variant';
import { IGNORING_THE_WATCHDOG } from './watchdog-variant';

/**
 * Deliberately broken variants of the decision code, one per invariant: the checker's tests show
 * that each is caught with a short counter-example. They exist only as inputs of the checker
 * (`DecisionMutation`); the agent's HA loop calls decide() directly and has no way to take one.
 */
export const BROKEN_VARIANTS: Record<InvariantId, DecisionMutation> = {
  /** No lease check before writes: the fence is never armed and a leader that lost its lock keeps its primary. */
  lease: {
    name: 'writes without the lease check',
    noFence: true,
    decision: (s, d) =>
      'need' in d || s.lockResult === 'refreshed' ? d : { ...d, actions: d.actions.filter((a) => a.type !== 'demote') },
  },
  /** maximum_lag_on_failover is not looked at. */
  promotion: {
    name: 'promoting regardless of lag',
    snapshot: (s) => ({ ...s, config: { ...s.config, maximum_lag_on_failover: Number.MAX_SAFE_INTEGER } }),
  },
  /** The race does not compare WAL positions with the members it reaches: a replica behind them may win it. */
  race: {
    name: 'racing without comparing WAL positions',
    snapshot: (s) => (s.peers ? { ...s, peers: s.peers.map((p) => ({ ...p, walPosition: 0 })) } : s),
  },
  /** `/sync` does not bar standbys that are not synchronous from the race. */
  sync: {
    name: 'racing without the synchronous standby rule',
    snapshot: (s) => ({ ...s, config: { ...s.config, synchronous_mode: 'off' } }),
  },
  /** The leader steps down in every cycle it leads, and promotes again in the next. */
  progress: {
    name: 'stepping down every cycle',
    decision: (s, d) =>
      !('need' in d) && d.verdict.startsWith('no action.') && s.lockResult === 'refreshed'
        ? {
            verdict: 'stepping down (broken variant)',
            actions: [{ type: 'demote', mode: 'fast', restart: true, upstream: null }],
          }
        : d,
  },
  /** A hung server is not killed: its lock holder lets the key go and leaves the server as it is. */
  unresponsive: {
    name: 'leaving a hung server running',
    decision: (s, d) => ('need' in d ? d : { ...d, actions: d.actions.filter((a) => a.type !== 'killPostgres') }),
  },
  site: IGNORING_SITES,
  watchdog: IGNORING_THE_WATCHDOG,
  'quorum-gap': GUESSING_CONFIRMED,
  /** The race reads no failover_priority tag: every member counts as priority 1. */
  priority: {
    name: 'racing without failover_priority',
    snapshot: (s) => ({
      ...s,
      local: { ...s.local, tags: { ...s.local.tags, failover_priority: 1 } },
      peers: s.peers?.map((p) => ({ ...p, tags: { ...p.tags, failover_priority: 1 } })),
    }),
  },
  /** The leader steps down for a switchover even when no member can take over (no check of the candidates). */
  request: {
    name: 'stepping down for a request nobody can take',
    decision: (_s, d) =>
      !('need' in d) && / is not possible$/.test(d.verdict)
        ? { verdict: 'demoting myself without a candidate (broken variant)', actions: [{ type: 'demoteGraceful' }] }
        : d,
  },
  /** A paused leader whose PostgreSQL stopped keeps its key (until ttl ends it). */
  pause: {
    name: 'keeping the key while paused without a primary',
    decision: (_s, d) =>
      !('need' in d) && d.verdict.startsWith('removed leader lock because postgres is not running')
        ? { verdict: 'keeping the leader lock (broken variant)', actions: [] }
        : d,
  },
  /** The quorum resolver answers nothing: synchronous_standby_names and `/sync` never follow the standbys. */
  'quorum-resolver': {
    name: 'a quorum resolver that changes nothing',
    code: { ...REAL_DECISION_CODE, quorumTransitions: () => [] },
  },
  /**
   * The quorum resolver makes its first two writes (synchronous_standby_names, `/sync`) in the opposite order: where
   * it lands is the same, the way there (what the two show in between) is not the reference's.
   */
  'quorum-reference': {
    name: 'a quorum resolver that makes its first two writes in the opposite order',
    code: {
      ...REAL_DECISION_CODE,
      quorumTransitions: (state) => {
        const [first, second, ...rest] = REAL_DECISION_CODE.quorumTransitions(state);
        if (!second || second.kind === 'restart') return REAL_DECISION_CODE.quorumTransitions(state);
        return [second, first, ...rest];
      },
    },
  },
  /** The race reads no `/history`: a running primary behind the cluster's timeline counts as the healthiest node. */
  timeline: {
    name: 'racing a primary without the cluster timeline',
    snapshot: (s) => (s.cluster ? { ...s, cluster: { ...s.cluster, history: null } } : s),
  },
  /** Nobody ever takes the free leader key: a cluster that lost its leader settles without one. */
  availability: {
    name: 'never racing for the leader key',
    decision: (_s, d) =>
      'need' in d && d.need === 'acquireLock' ? { verdict: 'not racing (broken variant)', actions: [] } : d,
  },
  /** The synchronous planner never lists a standby: commits stay asynchronous although standbys stream. */
  'sync-settled': {
    name: 'never naming a synchronous standby',
    code: { ...REAL_DECISION_CODE, planPriority: () => [] },
  },
  /** The recorder loses the role transition of a promotion. */
  replay: {
    name: 'promotion not recorded',
    dropsEvent: (type, to) => type === 'role.transition' && to === 'primary',
  },
};

/** Paused clusters treated as running: automatic failover while paused. */
export const IGNORING_PAUSE: DecisionMutation = {
  name: 'ignoring pause',
  snapshot: (s) => ({ ...s, config: { ...s.config, pause: false } }),
};
