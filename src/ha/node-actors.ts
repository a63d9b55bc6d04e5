import { ActorRefFrom, StateValue, waitFor } from 'xstate';
import { effectiveDynamicConfig } from '../config/dynamic-config';
import { EventSink, topLevelState } from '../events/transition-recorder';
import { LONG_ACTION_STATES, PostgresStateName } from '../postgresql/postgres-states';
import { postgresActors } from '../postgresql/postgres-actors';
import { postgresMachine } from '../postgresql/postgres.machine';
import { DynamicConfigCache } from './dynamic-config-cache';
import { createFailsafeCaller, FailsafeCaller } from './failsafe/failsafe-caller';
import { FailsafeState } from './failsafe/failsafe-state';
import { HaNodeDeps } from './ha-node-deps';
import { LeaderDuties } from './leader-duties';
import { LeaderLock } from './leader-lock';
import { leadershipMachine } from './leadership.machine';
import { MemberAgents } from './member-agents';
import { MemberSightings } from './member-sightings';
import { haMemoryMachine } from './ha-memory.machine';
import { NodeEvents } from './node-events';
import { NodeMemory } from './node-memory';
import { NodeSystem, recorderOf, startNodeSystem } from './node-system';
import { createPeerProbe, PeerProbe } from './peer-probe';
import { RestartScheduler } from './restart-scheduler';
import { RoleEvent, roleMachine, RoleName } from './role.machine';
import { Sampler } from './sampler';
import { remotePrimary } from './standby-cluster';
import { SyncReplication } from './sync/sync-replication';
import { tagConflicts } from './tags';
import { nodeTaskMachine } from './task-procedure';
import { taskMachine } from './task.machine';
import { WatchdogGuard } from './watchdog-guard';

/** What the node's actors call back into the HA cycle that owns them. */
export interface NodeHooks {
  /** Runs the HA cycle at once (a scheduled restart is due). */
  wake: () => void;
  restartNow: (timeoutSeconds?: number) => Promise<unknown>;
  /** A new reading of PostgreSQL was taken. */
  sampled: () => void;
  /** synchronous_standby_names changed: a running server is told the current settings. */
  reconfigure: () => void;
}

/**
 * One node's actors, wired once and never replaced: one XState actor system per node (node-system.ts)
 * whose root invokes the memory, postgres, role, leadership and task machines, the recorder, the
 * restart scheduler and the sampler, each registered by its systemId; beside them the lock and the sync
 * keeper. The HA cycle (`HaNode`) owns it; the procedures it runs (`postgres-procedures.ts`), the
 * settings PostgreSQL is given (`postgres-settings.ts`) and the member key (`node-member-key.ts`) are
 * functions over it. Its accessors only read or drive its actors.
 */
export class NodeActors extends NodeMemory {
  /** The root of the node's actor system: `root.system.get('sampler')` and the like find its actors. */
  readonly root: NodeSystem;
  readonly memory: ActorRefFrom<typeof haMemoryMachine>;
  readonly postgres: ActorRefFrom<typeof postgresMachine>;
  readonly role: ActorRefFrom<typeof roleMachine>;
  readonly leadership: ActorRefFrom<typeof leadershipMachine>;
  /** The background procedure running, as a recorded machine invoking it (see `busy`). */
  readonly task: ActorRefFrom<typeof taskMachine>;
  readonly events: NodeEvents;
  readonly sampler: Sampler;
  readonly lock: LeaderLock;
  readonly scheduler: RestartScheduler;
  readonly leaderDuties: LeaderDuties;
  /** How this node reads its peers' status (the leader race, switchover feasibility). */
  readonly probePeer: PeerProbe;
  /** synchronous_standby_names and `/sync`, kept by the lock holder. */
  readonly sync: SyncReplication;
  /** When each member was last seen in the DCS: a leader keeps departed members' slots for member_slots_ttl. */
  readonly sightings = new MemberSightings();
  /** Which agent wrote each member key: a change (a node migrated to or from Patroni) is a cluster event. */
  readonly agents = new MemberAgents();
  /** DCS failsafe mode: this leader's accepted rounds, or the leader this member accepted. */
  readonly failsafe = new FailsafeState();
  /** How this leader calls members' `POST /failsafe` while the DCS is down. */
  readonly callFailsafe: FailsafeCaller;
  /** `patroni.dynamic.json`: the configuration in force, kept in the data directory. */
  readonly configCache: DynamicConfigCache;
  /** When this agent started, on the monotonic clock: a stopped primary shows its shutdown checkpoint for a ttl after it. */
  readonly agentStartedAt: number;
  readonly watchdog: WatchdogGuard;

  constructor(
    readonly deps: HaNodeDeps,
    hooks: NodeHooks,
  ) {
    super(deps.config.name);
    const { config, clock, events, logger } = deps;
    this.agentStartedAt = clock.monotonic();
    // Every event of the node goes through the system's `recorder` actor, in order.
    const recorder: EventSink = { record: (event) => recorderOf(this.root).send({ type: 'RECORD', event }) };
    this.events = new NodeEvents(this.name, recorder, clock, () => this.sampler.sample?.timeline ?? null);
    this.sampler = new Sampler(
      deps.query,
      clock,
      logger,
      () => this.pgState() === 'running',
      () => hooks.sampled(),
      () =>
        this.dynamic.postgres_unresponsive_timeout > 0 ? this.dynamic.postgres_unresponsive_timeout * 500 : Infinity,
    );
    this.scheduler = new RestartScheduler({
      name: this.name,
      clock,
      logger,
      events: this.events,
      wake: hooks.wake,
      restartNow: hooks.restartNow,
      scheduled: () => this.scheduledRestart,
      remember: (event) => this.remember(event),
    });
    this.root = startNodeSystem(
      this.name,
      {
        postgres: postgresMachine.provide({ actors: postgresActors(deps.pg) }),
        task: nodeTaskMachine({ clock, logger, events: this.events }),
      },
      { sink: events, sampler: this.sampler, scheduler: this.scheduler },
      clock,
    );
    const actor = <T>(systemId: string) => this.root.system.get(systemId) as T;
    this.memory = actor('memory');
    this.postgres = actor('postgres');
    this.role = actor('role');
    this.leadership = actor('leadership');
    this.task = actor('task');
    this.applyLocalConfig(config);
    for (const conflict of tagConflicts(config.tags)) logger.warning(conflict);
    this.applyDynamic(effectiveDynamicConfig(null, config.bootstrap.dcs).config);
    this.configCache = new DynamicConfigCache(deps.pg, logger);
    this.probePeer = deps.probePeer ?? createPeerProbe(config.restapi, config.ctl);
    this.callFailsafe = deps.callFailsafe ?? createFailsafeCaller(config.restapi, config.ctl);
    this.watchdog = new WatchdogGuard(
      () => this.config.watchdog,
      logger,
      (type, cause, data) => this.events.recordWatchdog(type, cause, data),
      deps.watchdogDevice,
    );
    this.lock = new LeaderLock({
      clock,
      dcs: deps.dcs,
      pg: deps.pg,
      leadership: this.leadership,
      events: this.events,
      logger,
      ttlSeconds: () => this.dynamic.ttl,
      // A primary being stopped (a demotion's fast shutdown can wait for WAL senders to replicas it cannot reach)
      // may still take writes: its fence stays armed, to end it at the lease's deadline if the stop has not.
      // So may one being promoted, at any moment: if the lock is lost meanwhile, the fence stops it at the deadline.
      serverIsPrimary: () =>
        this.sampler.sample?.inRecovery === false ||
        ['stopping', 'stop_failed'].includes(this.pgState()) ||
        this.busy === 'promote',
      paused: () => this.dynamic.pause,
      fenceSettings: () => this.config.fence,
      // As the reference: only a primary's term has a watchdog (a standby leader takes no writes), none while paused.
      watchdog: () =>
        this.watchdog.request(
          this.dynamic.ttl,
          this.dynamic.loop_wait,
          !this.dynamic.pause && remotePrimary(this.dynamic.standby_cluster) === null,
        ),
    });
    this.leaderDuties = new LeaderDuties(
      this.name,
      deps.dcs,
      deps.query,
      clock,
      this.events,
      this.sightings,
      () => this.tags,
      logger,
      this.config.site,
    );
    this.sync = new SyncReplication({
      name: this.name,
      dcs: deps.dcs,
      query: deps.query,
      clock,
      logger,
      events: this.events,
      takeSample: async () => {
        await this.sampler.take();
        return this.sampler.sample;
      },
      reconfigure: hooks.reconfigure,
    });
  }

  /** The HA cycle starts: the restart scheduler's actor with it. */
  startCycling(): void {
    this.root.send({ type: 'START' });
  }

  /** PostgreSQL was adopted or found down: the sampler's actor starts reading it. */
  startSampling(): void {
    this.root.send({ type: 'SAMPLING_STARTED' });
  }

  /** The HA cycle ended: the sampler and the restart scheduler stop; the machines stay for the shutdown. */
  stopCycling(): void {
    this.root.send({ type: 'STOPPING' });
  }

  /** The agent stops: the postgres, role, leadership and task machines stop (the memory and the recorder stay). */
  stopActors(): void {
    this.root.send({ type: 'STOPPED' });
  }

  /** The multi-step procedure running in the background (`clone`, `switchover`...), null when none. */
  get busy(): string | null {
    return this.task.getSnapshot().context.task;
  }

  pgState(): PostgresStateName {
    return topLevelState(this.postgres.getSnapshot().value) as PostgresStateName;
  }

  roleName(): RoleName {
    return this.role.getSnapshot().value as RoleName;
  }

  sendRole(event: RoleEvent): void {
    this.role.send(event);
  }

  isPostmasterUp(): boolean {
    return ['running', 'starting', 'bootstrap_starting', 'restarting', 'stopping'].includes(this.pgState());
  }

  /** The long action in progress, if any: a task of the loop or an action of the postgres machine. */
  activity(): string | null {
    const value = this.postgres.getSnapshot().value;
    const state = topLevelState(value);
    return (
      this.busy ?? activeSubstate(value) ?? (LONG_ACTION_STATES.includes(state as PostgresStateName) ? state : null)
    );
  }

  /** Until `done`; a procedure's `signal` (its deadline passed) ends the wait too, with an error. */
  async waitForPostgres(
    done: (state: PostgresStateName, value: StateValue) => boolean,
    timeoutMs = 30 * 60_000,
    signal?: AbortSignal,
  ): Promise<void> {
    await waitFor(this.postgres, (s) => done(topLevelState(s.value) as PostgresStateName, s.value), {
      timeout: timeoutMs,
      ...(signal ? { signal } : {}),
    });
  }

  /** Until the postgres machine rests in `stopped` with no action (rewind, removal) running. */
  async waitForIdleStop(signal?: AbortSignal): Promise<void> {
    await this.waitForPostgres(
      (state, value) => state === 'stopped' && activeSubstate(value) === null,
      undefined,
      signal,
    );
  }

  /** A new upstream gets a fresh chance to stream before the node counts as stuck. */
  setUpstream(name: string | null): void {
    if (name === this.upstream) return;
    this.sampler.restartStreamingWatch();
    this.role.send({ type: 'UPSTREAM_CHANGED', upstream: name });
  }

  /** The member this node streams from, as the role machine last recorded it. */
  get upstream(): string | null {
    return this.role.getSnapshot().context.upstream;
  }
}

/** `rewinding` for `{stopped: 'rewinding'}`: a machine-level action running inside a stable state. */
export function activeSubstate(value: StateValue): string | null {
  if (typeof value === 'string') return null;
  const child = Object.values(value)[0];
  return typeof child === 'string' && child !== 'idle' ? child : null;
}
