import { setTimeout as sleep } from 'node:timers/promises';
import { Subscription } from 'rxjs';
import { Actor, createActor, StateValue, waitFor } from 'xstate';
import { Clock } from '../common/clock';
import { Logger } from '../common/logger';
import { parseLsn } from '../common/lsn';
import { timerDelay } from '../common/timers';
import { EffectiveDynamicConfig, StatorConfig } from '../config/config.types';
import { effectiveDynamicConfig } from '../config/dynamic-config';
import { ClusterView, Dcs, DynamicConfig, HistoryEntry, MemberData } from '../dcs/dcs.port';
import { EventLog } from '../events/event-log';
import { EventSink, topLevelState, transitionRecorder } from '../events/transition-recorder';
import { pendingRestart } from '../projections/schedule';
import { LONG_ACTION_STATES, PostgresStateName, POSTGRES_STATES } from '../postgresql/postgres-states';
import { postgresActors, postgresMachine, StartRequest } from '../postgresql/postgres.machine';
import { DataDirInfo, PostgresProcess, PostgresQuery, PostgresSample, PostgresSettings, UpstreamNode } from '../postgresql/postgres.port';
import { downstreamMembers } from './cascade';
import { HaSnapshot, LocalView, PeerReading, upstreamOf } from './cluster-snapshot';
import { decide, HaAction, Need } from './decide';
import { leadershipMachine, LeadershipEvent } from './leadership.machine';
import { createPeerProbe, PeerProbe } from './peer-probe';
import { RoleEvent, roleMachine, RoleName } from './role.machine';
import { publishedRestart, restartDue, restartFilterMismatch } from './scheduled-restart';
import { effectiveTags } from './tags';
import { unresponsiveForMs } from './unresponsive';

export interface HaNodeDeps {
  config: StatorConfig;
  dcs: Dcs;
  pg: PostgresProcess;
  query: PostgresQuery;
  events: EventSink;
  clock: Clock;
  logger: Logger;
  version: string;
  probePeer?: PeerProbe;
  /** The cluster's event log: a scheduled restart survives an agent restart through it. */
  eventLog?: EventLog;
  /** Reads the configuration file again (POST /reload, SIGHUP); throws when it is invalid. */
  reloadConfig?: () => StatorConfig;
  /** Called when the node cannot go on (a failed bootstrap): the process should exit, as the reference does. */
  onFatal?: (reason: string) => void;
}

/** What the API serves, copied from the node's memory: never waits on SQL or the DCS. */
export interface NodeView {
  name: string;
  pgState: PostgresStateName;
  role: RoleName;
  leadership: 'leader' | 'follower';
  /** Epoch ms until which the lock is known to be ours (0 when not leader). */
  lockValidUntil: number;
  sample: PostgresSample | null;
  sampleAt: number;
  /** Epoch ms when PostgreSQL last answered anything (a reading, or an error it sent): a hung server stops moving it. */
  pgAnsweredAt: number;
  cluster: ClusterView | null;
  /** Epoch ms of the last successful DCS read, 0 if none. */
  dcsLastSeen: number;
  config: EffectiveDynamicConfig;
  /** Epoch ms when the last HA cycle ran. */
  lastCycleAt: number;
  verdict: string;
  dataDir: DataDirInfo | null;
  tags: Record<string, unknown>;
  /** The long action in progress (`restart`, `switchover`, `clone`...), null when idle. */
  activity: string | null;
  scheduledRestart: ScheduledRestart | null;
}

/** A restart waiting for its time, with the filters it must still satisfy then. */
export interface ScheduledRestart {
  /** Epoch ms and the timestamp as the client wrote it. */
  at: number;
  schedule: string;
  role?: string;
  postgres_version?: string;
  restart_pending?: boolean;
  timeout?: number;
  /** The postmaster it was scheduled for: a restart in between cancels it. */
  postmasterStartTime: string | null;
}

/** Slot names as Patroni derives them from member names. */
export function slotNameOf(memberName: string): string {
  return memberName.toLowerCase().replace(/[^a-z0-9_]/g, '_');
}

/** Seconds of the lease the fence keeps in hand: the primary stops this long before the lease can expire. */
export function fenceSafetyMarginMs(ttlSeconds: number): number {
  return Math.max(2, Math.min(5, ttlSeconds * 0.25)) * 1000;
}

const SAMPLE_INTERVAL_MS = 1_000;
/** After SIGKILL of a hung server, how long its exit may take to reach the postgres machine through the fence. */
const KILL_EXIT_WAIT_MS = 5_000;

/**
 * How long a leader asked to switch over keeps serving before it demotes, while the candidate
 * already answers 503 on /replica: longer than the read pool's check interval of the shipped
 * HAProxy configuration (500 ms), so the load balancer takes the candidate out of the read pool
 * before it can become primary. Writes continue on the old primary meanwhile, so the write gap
 * does not grow; the switchover takes this much longer.
 */
export const LOAD_BALANCER_DRAIN_MS = 750;



/**
 * One node's HA agent: owns the postgres, role and leadership actors, runs the HA cycle every
 * loop_wait (or at once when the DCS watch or a PostgreSQL transition says something changed),
 * and carries out what decide() returns.
 */
export class HaNode {
  readonly postgres: Actor<typeof postgresMachine>;
  readonly role: Actor<typeof roleMachine>;
  readonly leadership: Actor<typeof leadershipMachine>;

  private readonly name: string;
  /** The local configuration; replaced by POST /reload. */
  private config: StatorConfig;
  private tags: Record<string, unknown>;
  /** The parameters PostgreSQL was last configured with, to notice changes. */
  private appliedParameters = '';
  private dynamic: EffectiveDynamicConfig;
  private cluster: ClusterView | null = null;
  private dcsLastSeen = 0;
  private dataDir: DataDirInfo | null = null;
  private sample: PostgresSample | null = null;
  private sampleAt = 0;
  private pgAnsweredAt = 0;
  private lockValidUntil = 0;
  private upstream: string | null = null;
  private bootstrapping = false;
  private checkpointAfterPromotePending = false;
  private reloadRequested = false;
  private scheduledRestart: ScheduledRestart | null = null;
  /** When this replica was last seen running without streaming (0 while it streams). */
  private notStreamingSince = 0;
  private busy: string | null = null;
  private verdict = '';
  private lastCycleAt = 0;
  private publishedOptime: number | null = null;
  private configAdjustments = '';
  private stopped = false;
  private wakePending = false;
  private wakeUp: (() => void) | null = null;
  private loopDone: Promise<void> | null = null;
  private sampler: NodeJS.Timeout | null = null;
  private scheduledWake: NodeJS.Timeout | null = null;
  private readonly subscriptions: Subscription[] = [];
  /** How this node reads its peers' status (the leader race, switchover feasibility). */
  readonly probePeer: PeerProbe;

  constructor(private readonly deps: HaNodeDeps) {
    const { config, clock, events } = deps;
    this.name = config.name;
    this.config = config;
    this.tags = effectiveTags(config.tags);
    this.dynamic = effectiveDynamicConfig(null, config.bootstrap.dcs).config;
    this.probePeer = deps.probePeer ?? createPeerProbe(deps.config.restapi);
    this.postgres = createActor(postgresMachine.provide({ actors: postgresActors(deps.pg) }), {
      inspect: transitionRecorder('postgres', this.name, events, clock),
    });
    this.role = createActor(roleMachine, { inspect: transitionRecorder('role', this.name, events, clock) });
    this.leadership = createActor(leadershipMachine, { inspect: transitionRecorder('leadership', this.name, events, clock) });
  }

  /** Detects what is on disk, adopts a running postmaster, then starts the HA loop. */
  async start(): Promise<void> {
    this.postgres.start();
    this.role.start();
    this.leadership.start();
    const { pg, dcs } = this.deps;
    this.subscriptions.push(
      pg.exits().subscribe((exit) => {
        this.deps.logger.warning(
          `postmaster ${exit.pid} exited (${exit.signal ?? `code ${exit.code}`})${exit.fenced ? ': stopped by the fence' : ''}` +
            (exit.lastLog ? `; its log ends: ${exit.lastLog}` : ''),
        );
        this.postgres.send({ type: 'POSTMASTER_EXITED', code: exit.code, signal: exit.signal, fenced: exit.fenced, lastLog: exit.lastLog });
      }),
      dcs.changes().subscribe((change) => {
        // Member keys change every cycle on every node: they are read on the next regular cycle.
        if (change.key === null || ['leader', 'config', 'failover', 'initialize'].includes(change.key)) this.wake();
      }),
    );
    let previousState = this.pgState();
    this.postgres.subscribe((snapshot) => {
      const state = topLevelState(snapshot.value) as PostgresStateName;
      if (state !== previousState) {
        previousState = state;
        // A server that just started gets its own chance to stream before it counts as stuck.
        if (state === 'running') {
          this.notStreamingSince = 0;
          this.pgAnsweredAt = this.deps.clock.now(); // a server that just started is not hung
          void this.takeSample();
        }
        else this.sample = null;
        this.wake();
      }
    });

    this.dataDir = await pg.inspectDataDir();
    const adopted = this.dataDir.state === 'initialized' ? await pg.adopt().catch(() => null) : null;
    if (this.dataDir.state === 'initialized') {
      if (this.dataDir.standbySignal) this.sendRole({ type: 'DETECTED_REPLICA' });
      else this.sendRole({ type: adopted ? 'DETECTED_PRIMARY' : 'DETECTED_DEMOTED' });
    }
    if (adopted) {
      this.deps.logger.info(`adopting running postmaster ${adopted.pid}`);
      this.postgres.send({ type: 'ADOPT', timeoutMs: this.startTimeoutMs() });
    }
    this.sampler = setInterval(() => void this.takeSample(), SAMPLE_INTERVAL_MS);
    this.loopDone = this.loop();
    void this.deps.eventLog?.whenLoaded().then(() => this.restoreScheduledRestart());
  }

  /** A restart scheduled before this agent (re)started is taken back from the event log. */
  private restoreScheduledRestart(): void {
    const pending = pendingRestart(this.deps.eventLog!.projections().schedule, this.name);
    if (!pending || this.scheduledRestart || this.stopped) return;
    const filters = pending.filters ?? {};
    this.scheduledRestart = {
      at: Date.parse(pending.at),
      schedule: pending.at,
      role: filters.role as string | undefined,
      postgres_version: filters.postgres_version as string | undefined,
      restart_pending: filters.restart_pending === true ? true : undefined,
      timeout: filters.timeout as number | undefined,
      postmasterStartTime: (filters.postmaster_start_time as string | undefined) ?? null,
    };
    this.deps.logger.info(`restored the restart scheduled at ${pending.at} from the event log`);
    this.wakeAt(this.scheduledRestart.at);
  }

  /** Stops the loop and the actors; PostgreSQL keeps running under its fence unless `stopPostgres`. */
  async stop(stopPostgres = false): Promise<void> {
    this.stopped = true;
    this.wake();
    await this.loopDone;
    if (this.sampler) clearInterval(this.sampler);
    if (this.scheduledWake) clearTimeout(this.scheduledWake);
    for (const subscription of this.subscriptions) subscription.unsubscribe();
    if (stopPostgres && this.isPostmasterUp()) {
      this.postgres.send({ type: 'STOP', mode: 'fast', timeoutMs: 60_000 });
      await waitFor(this.postgres, (s) => !['running', 'stopping'].includes(topLevelState(s.value)), { timeout: 65_000 }).catch(() => undefined);
      if (this.leadership.getSnapshot().value === 'leader') await this.releaseLock('shutdown');
    }
    this.postgres.stop();
    this.role.stop();
    this.leadership.stop();
  }

  /** Ends the current wait: the next cycle starts now (or right after the running one). */
  wake(): void {
    this.wakePending = true;
    this.wakeUp?.();
  }

  view(): NodeView {
    return {
      name: this.name,
      pgState: this.pgState(),
      role: this.role.getSnapshot().value as RoleName,
      leadership: this.leadership.getSnapshot().value as 'leader' | 'follower',
      lockValidUntil: this.lockValidUntil,
      sample: this.sample,
      sampleAt: this.sampleAt,
      pgAnsweredAt: this.pgAnsweredAt,
      cluster: this.cluster,
      dcsLastSeen: this.dcsLastSeen,
      config: this.dynamic,
      lastCycleAt: this.lastCycleAt,
      verdict: this.verdict,
      dataDir: this.dataDir,
      tags: this.tags,
      activity: this.activity(),
      scheduledRestart: this.scheduledRestart,
    };
  }

  /** The long action in progress, if any: a task of the loop or an action of the postgres machine. */
  activity(): string | null {
    const value = this.postgres.getSnapshot().value;
    const state = topLevelState(value);
    return this.busy ?? activeSubstate(value) ?? (LONG_ACTION_STATES.includes(state as PostgresStateName) ? state : null);
  }

  /**
   * Restarts PostgreSQL now (POST /restart): fast stop, same settings, start. Resolves with the
   * outcome once it is running again or failed.
   */
  async restartNow(timeoutSeconds?: number): Promise<'restarted' | 'failed'> {
    let outcome: 'restarted' | 'failed' = 'failed';
    await this.runTaskAndWait('restart', async () => {
      const start = this.startRequest(this.currentSettings());
      if (timeoutSeconds) start.timeoutMs = timeoutSeconds * 1000;
      this.postgres.send({ type: 'RESTART', start, mode: 'fast' });
      await this.waitForPostgres((state) => state !== 'restarting');
      outcome = this.pgState() === 'running' ? 'restarted' : 'failed';
    });
    return outcome;
  }

  /** Throws the data directory away and clones it again from the leader (POST /reinitialize). */
  startReinitialize(source: UpstreamNode): void {
    this.runTask('reinitialize', async () => {
      if (!(await this.deps.pg.upstreamReachable(source))) {
        this.deps.logger.warning(`not reinitializing: ${source.name} does not accept connections`);
        return;
      }
      if (this.isPostmasterUp()) {
        this.postgres.send({ type: 'STOP', mode: 'immediate', timeoutMs: 60_000 });
        await this.waitForPostgres((state) => !['running', 'stopping', 'starting'].includes(state));
      }
      this.postgres.send({ type: 'REMOVE_DATA' });
      await this.waitForPostgres((state, value) => state === 'stopped' && activeSubstate(value as StateValue) === null);
      this.sendRole({ type: 'DATA_REMOVED' });
      if (await this.cloneFrom(source)) await this.startAsReplica(source);
    });
  }

  /** Reads the DCS now, so that a read after an acknowledged write sees it (GET /config after PATCH). */
  async refreshClusterView(): Promise<ClusterView> {
    const cluster = await this.deps.dcs.read();
    this.cluster = cluster;
    this.dcsLastSeen = this.deps.clock.now();
    return cluster;
  }

  /** POST /reload: the configuration file is read again at the next cycle, as on SIGHUP. */
  requestReload(): void {
    this.reloadRequested = true;
  }

  scheduleRestart(restart: ScheduledRestart): boolean {
    if (this.scheduledRestart) return false;
    this.scheduledRestart = restart;
    this.recordCluster('restart.scheduled', `restart of ${this.name} scheduled at ${restart.schedule}`, {
      node: this.name,
      schedule: restart.schedule,
      filters: { ...publishedRestart(restart), postmaster_start_time: restart.postmasterStartTime },
    });
    this.wakeAt(restart.at);
    return true;
  }

  cancelScheduledRestart(reason = 'scheduled restart deleted'): boolean {
    if (!this.scheduledRestart) return false;
    this.recordCluster('restart.cancelled', reason, { node: this.name, schedule: this.scheduledRestart.schedule });
    this.scheduledRestart = null;
    return true;
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      const startedAt = this.deps.clock.now();
      this.wakePending = false;
      await this.cycle();
      if (this.stopped) break;
      const wait = startedAt + this.dynamic.loop_wait * 1000 - this.deps.clock.now();
      if (wait <= 0) {
        this.deps.logger.warning('Loop time exceeded, rescheduling immediately.');
        continue;
      }
      if (this.wakePending) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        this.wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wakeUp = null;
    }
  }

  /** One HA cycle; never throws. */
  private async cycle(): Promise<void> {
    const { dcs, logger, clock } = this.deps;
    try {
      this.lastCycleAt = clock.now();
      if (this.reloadRequested) this.reloadLocalConfig();
      if (this.pgState() === 'running') await this.takeSample();
      if (!this.isPostmasterUp()) this.dataDir = await this.deps.pg.inspectDataDir();

      let cluster: ClusterView | null = null;
      let dcsError: string | null = null;
      try {
        cluster = await dcs.read();
        this.cluster = cluster;
        this.dcsLastSeen = clock.now();
      } catch (error) {
        dcsError = errorText(error);
      }
      await this.applyDynamicConfig(cluster?.config?.value ?? null);

      if (this.leadership.getSnapshot().value === 'leader' && (!cluster || cluster.leader?.value !== this.name)) {
        // Without a DCS answer the lock cannot be confirmed, so it is given up, as the reference does.
        const reason = cluster ? `leader key is now ${cluster.leader?.value ?? 'absent'}` : `DCS is not accessible: ${dcsError}`;
        this.sendLeadership({ type: 'LOCK_LOST', reason });
        this.recordCluster('leader.lost', reason);
        this.lockValidUntil = 0;
      }

      let snapshot = this.snapshot(cluster, dcsError);
      let decision = decide(snapshot);
      for (let step = 0; 'need' in decision && step < 4; step++) {
        snapshot = await this.fulfil(decision.need, snapshot);
        decision = decide(snapshot);
      }
      if ('need' in decision) throw new Error(`decide() still needs ${decision.need}`);

      if (cluster && !this.dynamic.pause) this.evaluateScheduledRestart();
      this.applyChangedParameters();

      const prefix = this.dynamic.pause ? 'PAUSE: ' : '';
      logger.info(prefix + decision.verdict);
      this.recordVerdict(decision.verdict);
      for (const action of decision.actions) await this.execute(action, snapshot);

      if (cluster) await dcs.touchMember(this.memberData()).catch((e) => logger.warning(`failed to update member key: ${errorText(e)}`));
      this.keepFence();
    } catch (error) {
      logger.error(`HA cycle failed: ${errorText(error)}`);
    }
  }

  private snapshot(cluster: ClusterView | null, dcsError: string | null): HaSnapshot {
    const postgres = this.postgres.getSnapshot();
    const local: LocalView = {
      name: this.name,
      tags: this.tags,
      pgState: topLevelState(postgres.value) as PostgresStateName,
      busy: this.busy ?? activeSubstate(postgres.value),
      role: this.role.getSnapshot().value as RoleName,
      leadership: this.leadership.getSnapshot().value as 'leader' | 'follower',
      dataDir: this.dataDir ?? { state: 'missing', standbySignal: false },
      sample: this.sample,
      upstream: this.upstream,
      notStreamingSince: this.pgState() === 'running' ? this.notStreamingSince : 0,
      bootstrapping: this.bootstrapping,
      lastError: postgres.context.lastError,
      failedStarts: postgres.context.failedStarts,
      unresponsiveMs: unresponsiveForMs(this.pgState(), this.pgAnsweredAt, this.deps.clock.now()),
      lastStartAt: postgres.context.lastStartAt,
    };
    return { now: this.deps.clock.now(), config: this.dynamic, cluster, dcsError, local };
  }

  /** Performs the one I/O step decide() asked for and returns the snapshot with its outcome. */
  private async fulfil(need: Need, snapshot: HaSnapshot): Promise<HaSnapshot> {
    const { dcs, logger } = this.deps;
    switch (need) {
      case 'refreshLock': {
        const lease = await dcs.refreshLeader().catch((e) => {
          logger.warning(`failed to refresh leader lock: ${errorText(e)}`);
          return null;
        });
        if (lease) {
          this.lockValidUntil = lease.validUntil;
          this.armFence();
          if (this.leadership.getSnapshot().value !== 'leader') {
            this.sendLeadership({ type: 'LOCK_ACQUIRED', reason: 'leader key still held by this node' });
          }
          return { ...snapshot, lockResult: 'refreshed' };
        }
        if (this.leadership.getSnapshot().value === 'leader') {
          this.sendLeadership({ type: 'LOCK_LOST', reason: 'failed to update leader lock in DCS' });
          this.recordCluster('leader.lost', 'failed to update leader lock in DCS');
        }
        this.lockValidUntil = 0;
        return { ...snapshot, lockResult: 'refresh_failed' };
      }
      case 'acquireLock': {
        const lease = await dcs.acquireLeader().catch((e) => {
          logger.warning(`failed to acquire leader lock: ${errorText(e)}`);
          return null;
        });
        if (!lease) return { ...snapshot, lockResult: 'not_acquired' };
        this.lockValidUntil = lease.validUntil;
        this.armFence();
        this.sendLeadership({ type: 'LOCK_ACQUIRED', reason: 'won the leader race' });
        this.recordCluster('leader.acquired', 'won the leader race');
        return { ...snapshot, lockResult: 'acquired' };
      }
      case 'raceInitialize': {
        const won = await dcs.initialize('', true).catch(() => false);
        return { ...snapshot, initializeResult: won ? 'won' : 'lost' };
      }
      case 'probePeers': {
        const members = snapshot.cluster?.members.filter((m) => m.name !== this.name && m.data.api_url) ?? [];
        const peers: PeerReading[] = await Promise.all(members.map((m) => this.probePeer(m.name, m.data.api_url)));
        return { ...snapshot, peers };
      }
    }
  }

  private async execute(action: HaAction, snapshot: HaSnapshot): Promise<void> {
    const { dcs, config } = this.deps;
    switch (action.type) {
      case 'initdb':
        this.bootstrapping = true;
        this.sendRole({ type: 'BOOTSTRAP_STARTED' });
        this.recordCluster('cluster.bootstrap_started', 'won the initialize race');
        if (config.bootstrap.method !== 'initdb') {
          const command = config.bootstrap.methods[config.bootstrap.method]?.command;
          this.postgres.send({ type: 'CUSTOM_BOOTSTRAP', command, start: this.startRequest(this.settings('primary', null)) });
        } else {
          this.postgres.send({ type: 'INITDB' });
        }
        return;
      case 'clone':
        return this.runTask('clone', async () => {
          await this.cloneFrom(action.source);
        });
      case 'startPrimary':
        this.upstream = null;
        this.postgres.send({ type: 'START', start: this.startRequest(this.settings('primary', null)) });
        return;
      case 'startReplica':
        return this.runTask('start', async () => {
          await this.startAsReplica(action.upstream);
        });
      case 'rejoin':
        return this.runTask('rejoin', async () => {
          await this.rejoin(action.upstream, action.useRewind);
        });
      case 'promote':
        return this.runTask('promote', async () => {
          await this.promote();
        });
      case 'follow':
        this.setUpstream(action.upstream.name);
        this.postgres.send({ type: 'RECONFIGURE', settings: this.settings('replica', action.upstream) });
        if (this.roleName() === 'demoted') this.sendRole({ type: 'FOLLOWING' });
        return;
      case 'demote':
        return this.runTask('demote', async () => {
          this.sendRole({ type: 'DEMOTED' });
          this.postgres.send({ type: 'STOP', mode: action.mode, timeoutMs: 60_000 });
          await this.waitForPostgres((state) => !['running', 'stopping'].includes(state));
          if (!action.restart) return;
          if (action.upstream) await this.rejoin(action.upstream, this.dynamic.use_pg_rewind);
          else await this.startAsReplica(null);
        });
      case 'rewindReplica':
        return this.runTask('rejoin', async () => {
          if (!(await this.deps.pg.upstreamReachable(action.upstream))) {
            this.deps.logger.warning(`not rewinding: ${action.upstream.name} does not accept connections`);
            return;
          }
          this.postgres.send({ type: 'STOP', mode: 'fast', timeoutMs: 60_000 });
          await this.waitForPostgres((state) => !['running', 'stopping'].includes(state));
          await this.rejoin(action.upstream, this.dynamic.use_pg_rewind);
        });
      case 'releaseLock':
        await this.releaseLock(snapshot.dcsError ?? 'voluntary release');
        return;
      case 'finishBootstrap':
        return this.runTask('post_bootstrap', async () => {
          await this.deps.pg.postBootstrap();
          const sysid = this.sample?.systemIdentifier ?? (await this.deps.pg.inspectDataDir()).systemIdentifier ?? '';
          await dcs.initialize(sysid, false);
          if (!snapshot.cluster?.config) await dcs.setConfig(config.bootstrap.dcs as DynamicConfig, 'absent');
          const lease = await dcs.forceLeader();
          this.lockValidUntil = lease.validUntil;
          this.armFence();
          this.sendLeadership({ type: 'LOCK_ACQUIRED', reason: 'initialized a new cluster' });
          this.recordCluster('cluster.initialized', 'initialized a new cluster', { system_identifier: sysid });
          this.bootstrapping = false;
        });
      case 'abandonBootstrap':
        return this.runTask('abandon_bootstrap', async () => {
          await dcs.cancelInitialization();
          this.bootstrapping = false;
          this.postgres.send({ type: 'REMOVE_DATA' });
          await this.waitForPostgres((state, value) => state === 'stopped' && activeSubstate(value as StateValue) === null);
          this.sendRole({ type: 'DATA_REMOVED' });
          // Retrying at once would fail the same way; the reference exits and lets the supervisor decide.
          this.deps.onFatal?.(`failed to bootstrap the cluster: ${snapshot.local.lastError ?? snapshot.local.pgState}`);
        });
      case 'writeInitialize': {
        const sysid = this.dataDir?.systemIdentifier ?? this.sample?.systemIdentifier;
        if (sysid) await dcs.initialize(sysid, true).catch(() => false);
        return;
      }
      case 'clearFailover': {
        const cleared = await dcs.setFailover({}).catch(() => false);
        const request = snapshot.cluster?.failover?.value;
        if (cleared && action.fate && request?.scheduled_at) this.recordCluster(`switchover.${action.fate}`, this.verdict, { ...request });
        return;
      }
      case 'leaderDuties':
        await this.leaderDuties(snapshot.cluster);
        return;
      case 'serveDownstreams':
        await this.deps.query.syncPhysicalSlots(action.members.map(slotNameOf));
        return;
      case 'demoteGraceful': {
        const request = snapshot.cluster?.failover?.value;
        if (request?.scheduled_at) this.recordCluster('switchover.executed', this.verdict, { ...request });
        return this.runTask('switchover', async () => {
          await sleep(LOAD_BALANCER_DRAIN_MS);
          this.sendRole({ type: 'DEMOTED' });
          // A checkpoint first makes the shutdown checkpoint, and so the stop, short.
          await this.deps.query.checkpoint().catch(() => undefined);
          this.postgres.send({ type: 'STOP', mode: 'fast', timeoutMs: 60_000 });
          await this.waitForPostgres((state) => !['running', 'stopping'].includes(state));
          await this.releaseLock('switchover: demoting myself');
        });
      }
      case 'wakeAt':
        this.wakeAt(action.at);
        return;
      case 'killPostgres':
        // Only once every process is gone may the lock go: a server that wakes up must find nobody to write for it.
        await this.deps.pg.killProcessTree();
        await this.waitForPostgres((state) => state !== 'running', KILL_EXIT_WAIT_MS);
        return;
    }
  }

  /** Runs one cycle at `at` (a scheduled operation), besides the regular ones. */
  wakeAt(at: number): void {
    if (this.scheduledWake) clearTimeout(this.scheduledWake);
    this.scheduledWake = setTimeout(() => this.wake(), timerDelay(at - this.deps.clock.now()));
  }

  /** Runs a multi-step PostgreSQL action in the background; the loop reports it as in progress. */
  private runTask(name: string, work: () => Promise<void>): void {
    void this.runTaskAndWait(name, work);
  }

  private async runTaskAndWait(name: string, work: () => Promise<void>): Promise<void> {
    this.busy = name;
    try {
      await work();
    } catch (error) {
      this.deps.logger.error(`${name} failed: ${errorText(error)}`);
    } finally {
      this.busy = null;
      this.wake();
    }
  }

  /** The settings PostgreSQL runs with now: its current role and upstream, the current parameters. */
  private currentSettings(): PostgresSettings {
    if (this.sample && !this.sample.inRecovery) return this.settings('primary', null);
    const upstream = upstreamOf(this.cluster?.members.find((m) => m.name === this.upstream));
    return this.settings('replica', upstream);
  }

  /** A new upstream gets a fresh chance to stream before the node counts as stuck. */
  private setUpstream(name: string | null): void {
    if (name !== this.upstream) this.notStreamingSince = 0;
    this.upstream = name;
  }

  private async cloneFrom(source: UpstreamNode): Promise<boolean> {
    this.postgres.send({ type: 'CLONE', source });
    await this.waitForPostgres((state) => state !== 'creating_replica');
    const { lastOutcome, lastError } = this.postgres.getSnapshot().context;
    if (lastOutcome !== 'cloned') {
      this.deps.logger.error(`clone from ${source.name} failed: ${lastError}`);
      return false;
    }
    this.dataDir = await this.deps.pg.inspectDataDir();
    this.sendRole({ type: 'CLONE_COMPLETED' });
    return true;
  }

  private async startAsReplica(upstream: UpstreamNode | null): Promise<void> {
    const role = this.roleName();
    if (role === 'primary' || role === 'promoted') this.sendRole({ type: 'DEMOTED' });
    this.setUpstream(upstream?.name ?? null);
    this.postgres.send({ type: 'START', start: this.startRequest(this.settings('replica', upstream)) });
    await this.waitForPostgres((state) => state !== 'starting');
    if (this.pgState() === 'running' && this.roleName() === 'demoted') this.sendRole({ type: 'FOLLOWING' });
  }

  /**
   * A former primary joins the leader: pg_rewind, or a fresh clone when rewind is off or fails.
   * Nothing is removed while the leader does not answer: a dead leader is no reason to lose data.
   */
  private async rejoin(upstream: UpstreamNode, useRewind: boolean): Promise<void> {
    if (!(await this.deps.pg.upstreamReachable(upstream))) {
      this.deps.logger.warning(`not rejoining ${upstream.name} now: it does not accept connections`);
      return;
    }
    let rewound = false;
    if (useRewind) {
      const info = await this.deps.pg.inspectDataDir();
      const cleanShutdown = info.clusterState === 'shut down' || info.clusterState === 'shut down in recovery';
      this.postgres.send({ type: 'REWIND', source: upstream, crashRecovery: !cleanShutdown });
      await this.waitForPostgres((state, value) => state === 'stopped' && activeSubstate(value as StateValue) === null);
      const { lastOutcome, lastError } = this.postgres.getSnapshot().context;
      rewound = lastOutcome === 'rewound' || lastOutcome === 'not_needed';
      if (!rewound && !(await this.deps.pg.upstreamReachable(upstream))) {
        this.deps.logger.warning(`pg_rewind from ${upstream.name} failed and it no longer answers; keeping the data directory: ${lastError}`);
        return;
      }
      if (!rewound) this.deps.logger.warning(`pg_rewind from ${upstream.name} failed, reinitializing: ${lastError}`);
    }
    if (!rewound) {
      this.postgres.send({ type: 'REMOVE_DATA' });
      await this.waitForPostgres((state, value) => state === 'stopped' && activeSubstate(value as StateValue) === null);
      this.sendRole({ type: 'DATA_REMOVED' });
      if (!(await this.cloneFrom(upstream))) return;
    }
    await this.startAsReplica(upstream);
  }

  private async promote(): Promise<void> {
    // Slots for the other members exist before they reconnect to us, or they retry only after
    // wal_retrieve_retry_interval (5 s). Physical slots can be created on a standby.
    if (this.dynamic.use_slots && this.cluster) await this.syncMemberSlots(this.cluster).catch((e) => this.deps.logger.warning(`creating member slots failed: ${errorText(e)}`));
    // pg_control keeps the old timeline until the first checkpoint after promotion, and pg_rewind
    // on a former primary reads it: from now until that checkpoint the member key says so.
    this.checkpointAfterPromotePending = true;
    await this.deps.dcs.touchMember(this.memberData()).catch(() => undefined);
    this.sendRole({ type: 'PROMOTE_STARTED' });
    this.postgres.send({ type: 'PROMOTE', timeoutMs: this.dynamic.loop_wait * 1000 + 60_000 });
    await waitFor(this.postgres, (s) => activeSubstate(s.value) !== 'promoting', { timeout: 120_000 });
    const { lastOutcome, lastError } = this.postgres.getSnapshot().context;
    if (lastOutcome !== 'promoted') {
      this.deps.logger.error(`promote failed: ${lastError}`);
      this.sendRole({ type: 'PROMOTE_FAILED' });
      this.checkpointAfterPromotePending = false;
      return;
    }
    this.upstream = null;
    await this.takeSample();
    this.sendRole({ type: 'PROMOTE_COMPLETED' });
    this.recordCluster('leader.promoted', 'promoted self to leader', { timeline: this.sample?.timeline ?? null });
    await this.deps.query.checkpoint().catch((e) => this.deps.logger.warning(`checkpoint after promote failed: ${errorText(e)}`));
    this.checkpointAfterPromotePending = false;
  }

  private async releaseLock(reason: string): Promise<void> {
    const released = await this.deps.dcs.releaseLeader().catch(() => false);
    if (this.leadership.getSnapshot().value === 'leader') {
      this.sendLeadership({ type: 'LOCK_RELEASED', reason });
      this.recordCluster('leader.released', reason, { deleted: released });
    }
    this.lockValidUntil = 0;
    if (!this.sample || this.sample.inRecovery) this.deps.pg.disarmFence();
  }

  /** Optime, history and members' slots: what the lock holder publishes each cycle. */
  private async leaderDuties(cluster: ClusterView | null): Promise<void> {
    const { dcs } = this.deps;
    const sample = this.sample;
    if (!cluster || !sample) return;
    if (sample.walPosition !== this.publishedOptime) {
      await dcs.setStatus({ optime: sample.walPosition });
      this.publishedOptime = sample.walPosition;
    }
    const history = cluster.history?.value;
    if (sample.timeline === 1 && !history) await dcs.setHistory([]);
    const lastTimeline = history && history.length > 0 ? Number(history[history.length - 1][0]) : 0;
    if (sample.timeline > 1 && (!history || lastTimeline !== sample.timeline - 1)) {
      await dcs.setHistory(await this.readTimelineHistory(sample.timeline, history ?? []));
    }
    if (this.dynamic.use_slots) await this.syncMemberSlots(cluster);
  }

  /**
   * One physical slot per member that streams from the leader (not those cascading from a replica),
   * none for members that left. Checked every cycle rather than cached: pg_rewind and reclones drop
   * slots behind the agent's back.
   */
  private async syncMemberSlots(cluster: ClusterView): Promise<void> {
    await this.deps.query.syncPhysicalSlots(downstreamMembers(cluster, this.name, true).map(slotNameOf));
  }

  /** Rebuilds `/history` from `pg_wal/<TL>.history`, keeping stored timestamps of known entries. */
  private async readTimelineHistory(timeline: number, stored: HistoryEntry[]): Promise<HistoryEntry[]> {
    const file = `pg_wal/${timeline.toString(16).toUpperCase().padStart(8, '0')}.history`;
    const rows = await this.deps.query.query<{ content: string }>('SELECT pg_read_file($1) AS content', [file]);
    const lines = rows[0]?.content.split('\n').filter((line) => /^\d+\t/.test(line)) ?? [];
    return lines.map((line, index) => {
      const [tl, lsn, ...reason] = line.split('\t');
      const entryTimeline = Number(tl);
      const position = parseLsn(lsn);
      const known = stored.find((e) => Number(e[0]) === entryTimeline && Number(e[1]) === position);
      if (known && known.length >= 5) return known;
      const newest = index === lines.length - 1;
      const entry = [entryTimeline, position, reason.join('\t').trim(), isoWithOffset(this.deps.clock.now()), newest ? this.name : (known?.[4] ?? '')] as HistoryEntry;
      // The fact behind /history: recorded as the leader reads it from PostgreSQL's own file.
      this.recordCluster('timeline.created', `pg_wal/${file.slice(7)}`, {
        timeline: entry[0],
        lsn: entry[1],
        reason: entry[2],
        created_at: entry[3],
        leader: entry[4],
      });
      return entry;
    });
  }

  private async applyDynamicConfig(fromDcs: DynamicConfig | null): Promise<void> {
    const { config: next, adjustments } = effectiveDynamicConfig(fromDcs, this.config.bootstrap.dcs);
    const explained = adjustments.join('; ');
    if (explained !== this.configAdjustments) {
      this.configAdjustments = explained;
      for (const adjustment of adjustments) this.deps.logger.warning(adjustment);
    }
    const ttlChanged = next.ttl !== this.dynamic.ttl;
    if (next.pause !== this.dynamic.pause) this.postgres.send({ type: 'SET_PAUSE', paused: next.pause });
    this.dynamic = next;
    if (ttlChanged) await this.deps.dcs.setTtl(next.ttl).catch(() => undefined);
  }

  /** Re-arms the fence while this node holds the lock; disarms it once it is not a primary. */
  private keepFence(): void {
    if (this.leadership.getSnapshot().value === 'leader' && this.lockValidUntil > 0) this.armFence();
    else if (!this.sample || this.sample.inRecovery) this.deps.pg.disarmFence();
  }

  private armFence(): void {
    this.deps.pg.armFence(this.lockValidUntil - fenceSafetyMarginMs(this.dynamic.ttl));
  }

  private async takeSample(): Promise<void> {
    if (this.pgState() !== 'running') return;
    try {
      this.sample = await this.deps.query.sample();
      this.sampleAt = this.deps.clock.now();
      this.pgAnsweredAt = this.sampleAt;
      const streaming = !this.sample.inRecovery || this.sample.replicationState === 'streaming';
      if (streaming) this.notStreamingSince = 0;
      else if (this.notStreamingSince === 0) this.notStreamingSince = this.sampleAt;
      this.reconcileRoleWithServer();
    } catch (error) {
      // An error PostgreSQL sent (a SQLSTATE) shows it answers; a timeout or a refused connection does not.
      if (typeof (error as { code?: unknown }).code === 'string' && /^[0-9A-Z]{5}$/.test((error as { code: string }).code)) {
        this.pgAnsweredAt = this.deps.clock.now();
      }
      this.deps.logger.debug(`status query failed: ${errorText(error)}`);
    }
  }

  /** The lock holder whose server is already primary is primary (reference 3.13). */
  private reconcileRoleWithServer(): void {
    const role = this.roleName();
    // During a task (a demotion above all) a sample taken just before the stop would undo its role change.
    if (this.busy !== null || this.pgState() !== 'running') return;
    if (this.sample && !this.sample.inRecovery && this.leadership.getSnapshot().value === 'leader' && (role === 'replica' || role === 'demoted')) {
      this.sendRole({ type: 'PRIMARY_CONFIRMED' });
    }
  }

  memberData(): MemberData {
    const { config, version } = this.deps;
    const sample = this.sample;
    const pgState = this.pgState();
    const apiPath = config.compat === 'patroni' ? 'patroni' : 'stator';
    const data: MemberData = {
      conn_url: `postgres://${config.postgresql.connect_address}/postgres`,
      api_url: `${config.restapi.certfile ? 'https' : 'http'}://${config.restapi.connect_address}/${apiPath}`,
      state: POSTGRES_STATES[pgState].text,
      role: this.roleName(),
      version,
    };
    if (Object.keys(this.tags).length > 0) data.tags = this.tags;
    if (sample && pgState === 'running') {
      if (Object.keys(sample.pendingRestart).length > 0) {
        data.pending_restart = true;
        data.pending_restart_reason = sample.pendingRestart;
      }
      data.xlog_location = sample.walPosition;
      if (sample.inRecovery) {
        if (sample.replayedLsn !== null) data.replay_lsn = sample.replayedLsn;
        if (sample.receivedLsn !== null) data.receive_lsn = sample.receivedLsn;
        if (sample.replicationState) data.replication_state = sample.replicationState;
      }
      data.timeline = sample.timeline;
    }
    if (this.checkpointAfterPromotePending) data.checkpoint_after_promote = false;
    if (this.scheduledRestart) data.scheduled_restart = publishedRestart(this.scheduledRestart);
    if (this.dynamic.pause) data.pause = true;
    return data;
  }

  private settings(role: 'primary' | 'replica', upstream: UpstreamNode | null): PostgresSettings {
    const parameters = this.parameters();
    this.appliedParameters = JSON.stringify(parameters);
    return {
      role,
      upstream,
      slotName: role === 'replica' && upstream && this.dynamic.use_slots ? slotNameOf(this.name) : null,
      parameters,
    };
  }

  /** Server parameters: `/config` ones, overridden by the local file's (as Patroni merges them). */
  private parameters(): Record<string, string | number | boolean> {
    return { ...this.dynamic.parameters, ...this.config.postgresql.parameters };
  }

  /** A changed parameter set reaches a running server by a reload; pending_restart tells the rest. */
  private applyChangedParameters(): void {
    if (this.pgState() !== 'running' || this.activity() !== null) return;
    if (JSON.stringify(this.parameters()) === this.appliedParameters) return;
    this.deps.logger.info('PostgreSQL parameters changed: reloading the configuration');
    this.postgres.send({ type: 'RECONFIGURE', settings: this.currentSettings() });
  }

  /** POST /reload: the file is read again; a bad file is reported and the running configuration kept. */
  private reloadLocalConfig(): void {
    this.reloadRequested = false;
    if (!this.deps.reloadConfig) return;
    try {
      this.config = this.deps.reloadConfig();
      this.tags = effectiveTags(this.config.tags);
      this.deps.logger.info('configuration reloaded');
    } catch (error) {
      this.deps.logger.error(`reload failed, keeping the running configuration: ${errorText(error)}`);
    }
  }

  /** Runs a due scheduled restart (reference 3.7): never while paused, cancelled when stale or overtaken. */
  private evaluateScheduledRestart(): void {
    const restart = this.scheduledRestart;
    if (!restart || this.dynamic.pause || this.activity() !== null) return;
    const due = restartDue(restart, this.deps.clock.now(), this.dynamic.loop_wait);
    if (due === 'wait') return;
    if (due === 'stale') {
      this.scheduledRestart = null;
      this.recordCluster('restart.expired', `scheduled restart at ${restart.schedule} is stale, removed`, { node: this.name, schedule: restart.schedule });
      return;
    }
    if (restart.postmasterStartTime && this.sample && restart.postmasterStartTime !== this.sample.postmasterStartTime) {
      this.cancelScheduledRestart('postmaster restarted since the restart was scheduled: cancelled');
      return;
    }
    const mismatch = restartFilterMismatch(restart, this.view());
    this.scheduledRestart = null;
    if (mismatch) {
      this.deps.logger.info(`not proceeding with the restart: ${mismatch}`);
      this.recordCluster('restart.skipped', mismatch, { node: this.name, schedule: restart.schedule });
      return;
    }
    this.deps.logger.info('restart initiated');
    this.recordCluster('restart.executed', 'restart initiated', { node: this.name, schedule: restart.schedule });
    void this.restartNow(restart.timeout);
  }

  private startRequest(settings: PostgresSettings): StartRequest {
    return { settings, timeoutMs: this.startTimeoutMs(), at: this.deps.clock.now() };
  }

  private startTimeoutMs(): number {
    return Math.max(this.dynamic.primary_start_timeout, 60) * 1000;
  }

  private async waitForPostgres(done: (state: PostgresStateName, value: unknown) => boolean, timeoutMs = 30 * 60_000): Promise<void> {
    await waitFor(this.postgres, (s) => done(topLevelState(s.value) as PostgresStateName, s.value), { timeout: timeoutMs });
  }

  private pgState(): PostgresStateName {
    return topLevelState(this.postgres.getSnapshot().value) as PostgresStateName;
  }

  private isPostmasterUp(): boolean {
    return ['running', 'starting', 'bootstrap_starting', 'restarting', 'stopping'].includes(this.pgState());
  }

  private roleName(): RoleName {
    return this.role.getSnapshot().value as RoleName;
  }

  private sendRole(event: RoleEvent): void {
    this.role.send(event);
  }

  private sendLeadership(event: LeadershipEvent): void {
    this.leadership.send(event);
  }

  private recordVerdict(verdict: string): void {
    if (verdict === this.verdict) return;
    this.verdict = verdict;
    this.deps.events.record({
      stream: `node/${this.name}/ha`,
      type: 'ha.verdict',
      at: isoWithOffset(this.deps.clock.now()),
      node: this.name,
      from: null,
      to: null,
      cause: 'ha.cycle',
      data: { verdict },
    });
  }

  /** Appends a cluster fact (switchover requested, config changed...) to the event log. */
  recordCluster(type: string, cause: string, data: Record<string, unknown> = {}): void {
    this.deps.events.record({
      stream: 'cluster',
      type,
      at: isoWithOffset(this.deps.clock.now()),
      node: this.name,
      from: null,
      to: null,
      cause,
      data: { ...data, timeline: data.timeline ?? this.sample?.timeline ?? null },
    });
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** `rewinding` for `{stopped: 'rewinding'}`: a machine-level action running inside a stable state. */
function activeSubstate(value: StateValue): string | null {
  if (typeof value === 'string') return null;
  const child = Object.values(value)[0];
  return typeof child === 'string' && child !== 'idle' ? child : null;
}

/** ISO 8601 with the local offset, as the reference writes history timestamps. */
export function isoWithOffset(epochMs: number): string {
  const date = new Date(epochMs);
  const offsetMinutes = -date.getTimezoneOffset();
  const local = new Date(epochMs + offsetMinutes * 60_000).toISOString().replace('Z', '');
  const sign = offsetMinutes >= 0 ? '+' : '-';
  const abs = Math.abs(offsetMinutes);
  return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}
