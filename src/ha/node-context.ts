import { Actor, createActor, StateValue, waitFor } from 'xstate';
import { sleep, TimerClock } from '../common/clock';
import { errorText } from '../common/error-text';
import { Logger } from '../common/logger';
import { StatorConfig } from '../config/config.types';
import { effectiveDynamicConfig } from '../config/dynamic-config';
import { pgCtlTimeoutMs } from '../config/postgresql-programs-config';
import { standbyRecoveryParameters } from '../config/standby-cluster-config';
import { Dcs, DynamicConfig } from '../dcs/dcs.port';
import { EventLog } from '../events/event-log';
import { EventSink, topLevelState, transitionRecorder } from '../events/transition-recorder';
import { LONG_ACTION_STATES, PostgresStateName } from '../postgresql/postgres-states';
import { postgresActors } from '../postgresql/postgres-actors';
import { postgresMachine } from '../postgresql/postgres.machine';
import { StartRequest } from '../postgresql/postgres-machine-types';
import { PostgresProcess, PostgresQuery, PostgresSettings, UpstreamNode } from '../postgresql/postgres.port';
import { upstreamOf } from './cluster-snapshot';
import { DynamicConfigCache } from './dynamic-config-cache';
import { LeaderDuties } from './leader-duties';
import { slotNameOf } from './slot-plan';
import { MemberAgents } from './member-agents';
import { MemberSightings } from './member-sightings';
import { LeaderLock } from './leader-lock';
import { leadershipMachine } from './leadership.machine';
import { memberData } from './member-data';
import { NodeEvents } from './node-events';
import { createPeerProbe, PeerProbe } from './peer-probe';
import { RestartScheduler } from './restart-scheduler';
import { RoleEvent, roleMachine, RoleName } from './role.machine';
import { Sampler } from './sampler';
import { readPoolWithdrawal } from './read-pool';
import { remotePrimary } from './standby-cluster';
import { startTimeoutMs } from './postgres-deadlines';
import { SyncReplication } from './sync/sync-replication';
import { DeviceCheck } from '../postgresql/fence/watchdog-device';
import { WATCHDOG_ACTIVATION_WAIT_MS, WatchdogGuard } from './watchdog-guard';
import { createFailsafeCaller, FailsafeCaller } from './failsafe/failsafe-caller';
import { FailsafeState } from './failsafe/failsafe-state';
import { taskMachine } from './task.machine';
import { NodeMemory } from './node-memory';
import { tagConflicts } from './tags';

export interface HaNodeDeps {
  config: StatorConfig;
  dcs: Dcs;
  pg: PostgresProcess;
  query: PostgresQuery;
  events: EventSink;
  clock: TimerClock;
  logger: Logger;
  /** Each cycle's verdict line (Patroni logs it from `patroni.__main__`, not `patroni.ha`); `logger` without it. */
  verdictLogger?: Logger;
  version: string;
  /** The agent's runtime (`node 24.21.0`), published in the member key. */
  runtime?: string;
  probePeer?: PeerProbe;
  /** How this leader calls members' `POST /failsafe` while the DCS is down. */
  callFailsafe?: FailsafeCaller;
  /** The cluster's event log: a scheduled restart survives an agent restart through it. */
  eventLog?: EventLog;
  /** Reads the configuration file again (POST /reload, SIGHUP); throws when it is invalid. */
  reloadConfig?: () => StatorConfig;
  /** Called when the node cannot go on (a failed bootstrap): the process should exit, as the reference does. */
  onFatal?: (reason: string) => void;
  /** Whether the watchdog device may be opened (default: the agent's user can write it). */
  watchdogDevice?: DeviceCheck;
}

/**
 * One node's actors and what they share: the postgres, role, leadership and task machines, the sampler,
 * the scheduler, the lock; what the HA cycle keeps between cycles is the memory machine (NodeMemory). The HA cycle
 * (`HaNode`) and the procedures it runs (`postgres-procedures.ts`) both work on it.
 */
export class NodeContext extends NodeMemory {
  readonly postgres: Actor<typeof postgresMachine>;
  readonly role: Actor<typeof roleMachine>;
  readonly leadership: Actor<typeof leadershipMachine>;
  /** The background procedure running, as a recorded machine (see `busy`). */
  readonly task: Actor<typeof taskMachine>;
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
  private readonly agentStartedAt: number;
  readonly watchdog: WatchdogGuard;
  /** The parameters PostgreSQL was last configured with, to notice changes. */
  private appliedParameters = '';

  constructor(readonly deps: HaNodeDeps, wake: () => void, restartNow: (timeoutSeconds?: number) => Promise<unknown>) {
    super(deps.config.name, deps.events, deps.clock);
    const { config, clock, events, logger } = deps;
    this.agentStartedAt = clock.monotonic();
    this.applyLocalConfig(config);
    for (const conflict of tagConflicts(config.tags)) logger.warning(conflict);
    this.applyDynamic(effectiveDynamicConfig(null, config.bootstrap.dcs).config);
    this.configCache = new DynamicConfigCache(deps.pg, logger);
    this.probePeer = deps.probePeer ?? createPeerProbe(config.restapi, config.ctl);
    this.callFailsafe = deps.callFailsafe ?? createFailsafeCaller(config.restapi, config.ctl);
    this.postgres = createActor(postgresMachine.provide({ actors: postgresActors(deps.pg) }), {
      inspect: transitionRecorder('postgres', this.name, events, clock),
    });
    this.role = createActor(roleMachine, { inspect: transitionRecorder('role', this.name, events, clock) });
    this.leadership = createActor(leadershipMachine, { inspect: transitionRecorder('leadership', this.name, events, clock) });
    this.task = createActor(taskMachine, { inspect: transitionRecorder('task', this.name, events, clock) });
    this.events = new NodeEvents(this.name, events, clock, () => this.sampler.sample?.timeline ?? null);
    this.sampler = new Sampler(
      deps.query,
      clock,
      logger,
      () => this.pgState() === 'running',
      () => this.reconcileRoleWithServer(),
      () => (this.dynamic.postgres_unresponsive_timeout > 0 ? this.dynamic.postgres_unresponsive_timeout * 500 : Infinity),
    );
    this.watchdog = new WatchdogGuard(() => this.config.watchdog, logger, (type, cause, data) => this.events.recordWatchdog(type, cause, data), deps.watchdogDevice);
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
      serverIsPrimary: () => this.sampler.sample?.inRecovery === false || ['stopping', 'stop_failed'].includes(this.pgState()),
      paused: () => this.dynamic.pause,
      fenceSettings: () => this.config.fence,
      // As the reference: only a primary's term has a watchdog (a standby leader takes no writes), none while paused.
      watchdog: () => this.watchdog.request(this.dynamic.ttl, this.dynamic.loop_wait, !this.dynamic.pause && remotePrimary(this.dynamic.standby_cluster) === null),
    });
    this.scheduler = new RestartScheduler({ name: this.name, clock, logger, events: this.events, wake, restartNow });
    this.leaderDuties = new LeaderDuties(this.name, deps.dcs, deps.query, clock, this.events, this.sightings, () => this.tags, logger, this.config.site);
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
      reconfigure: () => {
        if (this.pgState() === 'running') this.postgres.send({ type: 'RECONFIGURE', settings: this.currentSettings() });
      },
    });
  }

  /** Mode `required`: PostgreSQL is promoted only once the fence holds the watchdog (not while paused, as the reference). */
  watchdogBeforePromotion(): Promise<void> {
    if (this.dynamic.pause) return Promise.resolve();
    return this.watchdog.awaitActivation(() => this.deps.pg.fenceState(), (ms) => sleep(this.deps.clock, ms), WATCHDOG_ACTIVATION_WAIT_MS);
  }

  /** Looks at the watchdog once per HA cycle (mode `required`): a node without one may not lead. */
  checkWatchdog(): void {
    const failure = this.watchdog.failure(this.dynamic.ttl, this.dynamic.loop_wait, this.deps.pg.fenceState());
    this.remember({ type: 'WATCHDOG_FAILURE_CHANGED', failure });
  }

  /**
   * Notes when this running replica leaves the read pool because it is about to be primary (it took
   * the lock, or it is a due switchover's candidate), as the health checks answer from the same
   * facts; each change is an event. The promotion waits the drain from this moment (read-pool.ts).
   */
  trackReadPool(now: number): void {
    const inPool = this.pgState() === 'running' && this.sampler.sample?.inRecovery === true && this.tags.noloadbalance !== true;
    const leadership = this.leadership.getSnapshot().value as 'leader' | 'follower';
    const reason = inPool ? readPoolWithdrawal(leadership, this.cluster, this.name, now) : null;
    if (reason !== null && this.readPoolWithdrawnAt === null) {
      this.remember({ type: 'READ_POOL_WITHDRAWN', at: this.deps.clock.monotonic() });
      this.events.recordLoadBalancer('load_balancer.replica_checks_withdrawn', reason, { drain_ms: this.dynamic.load_balancer_drain_ms });
    } else if (reason === null && this.readPoolWithdrawnAt !== null) {
      this.remember({ type: 'READ_POOL_RESTORED' });
      if (inPool) this.events.recordLoadBalancer('load_balancer.replica_checks_restored', 'no longer about to be primary');
    }
  }

  /** What this node runs with, and a lock holder publishes, when the DCS holds no `/config`: Patroni's cached copy, else `bootstrap.dcs`. */
  configWithoutDcs(): DynamicConfig {
    return this.configCache.withoutDcs(this.config.bootstrap.dcs) as DynamicConfig;
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
    return this.busy ?? activeSubstate(value) ?? (LONG_ACTION_STATES.includes(state as PostgresStateName) ? state : null);
  }

  async waitForPostgres(done: (state: PostgresStateName, value: StateValue) => boolean, timeoutMs = 30 * 60_000): Promise<void> {
    await waitFor(this.postgres, (s) => done(topLevelState(s.value) as PostgresStateName, s.value), { timeout: timeoutMs });
  }

  /** Until the postgres machine rests in `stopped` with no action (rewind, removal) running. */
  async waitForIdleStop(): Promise<void> {
    await this.waitForPostgres((state, value) => state === 'stopped' && activeSubstate(value) === null);
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

  settings(role: 'primary' | 'replica', upstream: UpstreamNode | null): PostgresSettings {
    const remote = remotePrimary(this.dynamic.standby_cluster);
    const fromRemote = role === 'replica' && remote !== null && upstream?.name === remote.name;
    const parameters = this.parameters(fromRemote);
    const files = this.configurationFiles(role);
    this.appliedParameters = this.fingerprint(parameters);
    // The remote primary knows this cluster by the slot standby_cluster names, if any; a member by its own.
    const slotName = fromRemote ? this.dynamic.standby_cluster!.primary_slot_name : role === 'replica' && upstream && this.dynamic.use_slots ? slotNameOf(this.name) : null;
    return { role, upstream, slotName, parameters, ...files };
  }

  /** pg_hba, pg_ident and a replica's recovery settings: the local file's where it sets them, else `/config`'s (as Patroni). */
  private configurationFiles(role: 'primary' | 'replica'): Pick<PostgresSettings, 'pgHba' | 'pgIdent' | 'recoveryConf' | 'bootstrapHba'> {
    const local = this.config.postgresql;
    const pgHba = local.pg_hba.length ? local.pg_hba : this.dynamic.pg_hba;
    const pgIdent = local.pg_ident?.length ? local.pg_ident : this.dynamic.pg_ident;
    const recoveryConf = local.recovery_conf ?? this.dynamic.recovery_conf;
    return {
      ...(pgHba.length ? { pgHba } : { bootstrapHba: this.config.bootstrap.pg_hba ?? [] }),
      pgIdent,
      ...(role === 'replica' ? { recoveryConf } : {}),
    };
  }

  /** The settings PostgreSQL runs with now: its current role and upstream, the current parameters. */
  currentSettings(): PostgresSettings {
    if (this.serverRole() === 'primary') return this.settings('primary', null);
    const remote = remotePrimary(this.dynamic.standby_cluster);
    const upstream = this.followsRemote() ? remote : upstreamOf(this.cluster?.members.find((m) => m.name === this.upstream));
    return this.settings('replica', upstream);
  }

  /** Whether the `/config` or local parameters, pg_hba, pg_ident or recovery_conf changed since PostgreSQL was last configured. */
  parametersChanged(): boolean {
    return this.fingerprint(this.parameters(this.followsRemote())) !== this.appliedParameters;
  }

  /**
   * The inputs whose change makes a reload, the same for every role (recovery_conf included): a role the readings
   * have not caught up with yet must not look like a change.
   */
  private fingerprint(parameters: Record<string, string | number | boolean>): string {
    return JSON.stringify({ parameters, files: this.configurationFiles('replica') });
  }

  private serverRole(): 'primary' | 'replica' {
    const sample = this.sampler.sample;
    // A stopped server has no reading: its role says what it was.
    return (sample ? !sample.inRecovery : ['primary', 'promoted'].includes(this.roleName())) ? 'primary' : 'replica';
  }

  startRequest(settings: PostgresSettings): StartRequest {
    // A lock holder (a standby leader too) waits as a primary does before its start counts as failed: it gives the lock up then.
    const waitsAsPrimary = settings.role === 'primary' || this.lock.held;
    return { settings, timeoutMs: this.startTimeoutMs(waitsAsPrimary ? 'primary' : 'replica'), at: this.deps.clock.monotonic() };
  }

  startTimeoutMs(role: 'primary' | 'replica'): number {
    return startTimeoutMs(role, this.dynamic, this.pgCtlTimeoutMs());
  }

  /** `postgresql.pg_ctl_timeout` in ms: the bound of a start, a stop, a promotion. */
  pgCtlTimeoutMs(): number {
    return pgCtlTimeoutMs(this.config.postgresql);
  }

  /** `postgresql.remove_data_directory_on_*`: the local file's value, else the dynamic configuration's. */
  removesDataDirectoryOn(failure: 'rewind_failure' | 'diverged_timelines'): boolean {
    const key = `remove_data_directory_on_${failure}` as const;
    return this.config.postgresql[key] ?? this.dynamic[key];
  }

  memberData() {
    return memberData({
      config: this.config,
      version: this.deps.version,
      runtime: this.deps.runtime,
      pgState: this.pgState(),
      role: this.roleName(),
      sample: this.sampler.sample,
      tags: this.leavingSync ? { ...this.tags, nosync: true } : this.tags,
      checkpointAfterPromotePending: this.checkpointAfterPromotePending,
      scheduledRestart: this.scheduler.current,
      paused: this.dynamic.pause,
      shutdownCheckpoint: this.shutdownCheckpoint(),
    });
  }

  /**
   * A primary stopped cleanly (pg_control says `shut down`) holds the most WAL after a whole-cluster
   * stop, the shutdown checkpoint included. While its server is down its member key shows that
   * checkpoint: when its agent stops, and for the first ttl after it starts again. No member behind
   * it wins a race it cannot answer meanwhile (decide.ts), and the wait never outlasts a ttl.
   */
  private shutdownCheckpoint(): { lsn: number; timeline?: number } | null {
    const info = this.dataDir;
    if (this.pgState() === 'running' || info?.clusterState !== 'shut down' || info.checkpointLsn === undefined) return null;
    if (!this.leaving && this.deps.clock.monotonic() - this.agentStartedAt > this.dynamic.ttl * 1000) return null;
    return { lsn: info.checkpointLsn, timeline: info.timeline };
  }

  /** POST /reload: the file is read again; a bad file is reported and the running configuration kept. */
  reloadLocalConfig(): void {
    if (!this.deps.reloadConfig) return;
    try {
      const reloaded = this.deps.reloadConfig();
      // As Patroni's branch: the site is read at start only (members and /status must not change sites under a running leader).
      if (reloaded.site !== this.config.site) this.deps.logger.warning(`site changed from ${this.config.site ?? '(none)'} to ${reloaded.site ?? '(none)'} in the file: it takes effect at the next start`);
      const next = { ...reloaded, site: this.config.site };
      if (next.site === undefined) delete next.site;
      this.applyLocalConfig(next);
      for (const conflict of tagConflicts(this.config.tags)) this.deps.logger.warning(conflict);
      this.deps.logger.info('configuration reloaded');
    } catch (error) {
      this.deps.logger.error(`reload failed, keeping the running configuration: ${errorText(error)}`);
    }
  }

  /** Server parameters: `/config` ones, overridden by the local file's (as Patroni merges them). */
  /** Whether this server streams from a standby cluster's remote primary (it is the standby leader). */
  followsRemote(): boolean {
    return this.upstream !== null && this.upstream === remotePrimary(this.dynamic.standby_cluster)?.name;
  }

  private parameters(fromRemote: boolean): Record<string, string | number | boolean> {
    const parameters = { ...this.dynamic.parameters, ...this.config.postgresql.parameters };
    // A standby leader also restores from the remote's archive, as standby_cluster says.
    if (fromRemote) Object.assign(parameters, standbyRecoveryParameters(this.dynamic.standby_cluster!));
    // A replica's copy of a logical slot is only usable if the primary keeps the catalog rows it needs.
    if (this.dynamic.slots.some((slot) => slot.type === 'logical') && !('hot_standby_feedback' in parameters)) parameters.hot_standby_feedback = 'on';
    // A cluster being bootstrapped has nothing to lose yet, and its post_bootstrap must commit without standbys.
    const standbyNames = this.bootstrapping ? undefined : this.sync.standbyNamesFor(this.dynamic, this.sampler.sample, this.lock.held);
    if (standbyNames !== undefined) parameters.synchronous_standby_names = standbyNames;
    return parameters;
  }

  /** The lock holder whose server is already primary is primary (reference 3.13). */
  private reconcileRoleWithServer(): void {
    const role = this.roleName();
    const sample = this.sampler.sample;
    // During a task (a demotion above all) a sample taken just before the stop would undo its role change.
    if (this.busy !== null || this.pgState() !== 'running') return;
    if (sample && !sample.inRecovery && this.lock.held && (role === 'replica' || role === 'demoted')) {
      this.sendRole({ type: 'PRIMARY_CONFIRMED' });
    }
  }
}

/** `rewinding` for `{stopped: 'rewinding'}`: a machine-level action running inside a stable state. */
export function activeSubstate(value: StateValue): string | null {
  if (typeof value === 'string') return null;
  const child = Object.values(value)[0];
  return typeof child === 'string' && child !== 'idle' ? child : null;
}
