import { Subscription } from 'rxjs';
import { ActorRefFrom, waitFor } from 'xstate';
import { wallTimeOf } from '../common/clock';
import { errorText } from '../common/error-text';
import { DcsBudget, outsideDcsBudget, withinDcsBudget } from '../dcs/dcs-budget';
import { ClusterView } from '../dcs/dcs.port';
import { topLevelState } from '../events/transition-recorder';
import { postgresMachine } from '../postgresql/postgres.machine';
import { UpstreamNode } from '../postgresql/postgres.port';
import { HaSnapshot, RaceBackoffState } from './cluster-snapshot';
import { decide } from './decide';
import { FailsafeCall } from './failsafe/failsafe-caller';
import { executeAction } from './ha-actions';
import { leadershipMachine } from './leadership.machine';
import { HaNodeDeps } from './ha-node-deps';
import { NodeActors } from './node-actors';
import { NodeSystem } from './node-system';
import { NodeView, ScheduledRestart } from './node-view';
import { nodeViewOf } from './node-view-of';
import { fulfilNeed } from './fulfil-need';
import { applyChangedParameters, DynamicConfigApplier } from './dynamic-config-apply';
import { OperationAnswer } from './operation-types';
import { PeerProbe } from './peer-probe';
import { procedureDeadlineMs, shutdownStopDeadlineMs } from './postgres-deadlines';
import { ProcedureWork } from './task.machine';
import { publishShutdownPosition, reinitialize, restart } from './postgres-procedures';
import { roleMachine } from './role.machine';
import { snapshotOf } from './snapshot-of';
import { readCluster } from './cycle-dcs-read';
import { followPostgres } from './postgres-watch';
import { WallClockJumps } from './wall-clock-jumps';
import { whileNotSyncStandby } from './sync/leave-sync';
import { pgCtlTimeoutOf, reconcileRoleWithServer, reconfigureRunning, startTimeoutOf } from './postgres-settings';
import { memberKeyOf } from './node-member-key';
import { trackReadPool } from './load-balancer-drain';
import { checkWatchdog } from './watchdog-checks';
import { reloadLocalConfig } from './local-config-reload';
import { CYCLE_READING_WAIT_MS } from './sampler';

export type { HaNodeDeps } from './ha-node-deps';
export type { NodeView, ScheduledRestart } from './node-view';

/** Told about reloads (SIGHUP, POST /reload): systemd's RELOADING=1 and READY=1. */
export interface ReloadWatcher {
  requested(): void;
  done(): void;
}

/**
 * The `ha` actor of the design: one node's HA cycle. It runs every loop_wait (or at once when the
 * DCS watch or a PostgreSQL transition says something changed), reads the cluster, asks the pure
 * decide() what to do, and carries it out on the node's other actors (`NodeActors`, which it builds once and owns).
 */
export class HaNode {
  private readonly node: NodeActors;
  private reloadRequested = false;
  private readonly reloadWatchers: ReloadWatcher[] = [];
  private lastCycleAt = 0;
  /**
   * `primary_race_backoff`'s memory (RaceBackoffState). Private and not recorded: both follow from each
   * cycle's readings (the DCS's leader key, the WAL position), which the log does not hold either.
   */
  private noLeaderSince = 0;
  private lastCycleWalPosition: number | null = null;
  private readonly wallClockJumps: WallClockJumps;
  private stopped = false;
  private wakePending = false;
  private wakeUp: (() => void) | null = null;
  private loopDone: Promise<void> | null = null;
  private readonly subscriptions: Subscription[] = [];
  private readonly dynamicConfig: DynamicConfigApplier;

  constructor(private readonly deps: HaNodeDeps) {
    this.node = new NodeActors(deps, {
      wake: () => this.wake(),
      restartNow: (timeout) => this.restartNow(timeout),
      sampled: () => reconcileRoleWithServer(this.node),
      reconfigure: () => reconfigureRunning(this.node),
    });
    this.wallClockJumps = new WallClockJumps(deps.clock);
    this.dynamicConfig = new DynamicConfigApplier(deps.dcs, deps.logger);
  }

  get postgres(): ActorRefFrom<typeof postgresMachine> {
    return this.node.postgres;
  }

  get role(): ActorRefFrom<typeof roleMachine> {
    return this.node.role;
  }

  get leadership(): ActorRefFrom<typeof leadershipMachine> {
    return this.node.leadership;
  }

  /** The node's actor system: `system.get('sampler' | 'restartScheduler' | 'recorder' | 'memory' | ...)` (node-system.ts). */
  get actorSystem(): NodeSystem['system'] {
    return this.node.root.system;
  }

  get probePeer(): PeerProbe {
    return this.node.probePeer;
  }

  /** Detects what is on disk, adopts a running postmaster, then starts the HA loop. */
  async start(): Promise<void> {
    const node = this.node;
    node.startCycling();
    const { pg, dcs, logger } = this.deps;
    this.subscriptions.push(
      followPostgres(node, () => this.wake()),
      dcs.changes().subscribe((change) => {
        // Member keys change every cycle on every node: they are read on the next regular cycle.
        if (change.key === null || ['leader', 'config', 'failover', 'initialize'].includes(change.key)) this.wake();
      }),
    );

    const dataDir = await pg.inspectDataDir();
    node.remember({ type: 'DATA_DIR_INSPECTED', dataDir });
    if (dataDir.state === 'initialized') await node.configCache.load();
    const adopted = dataDir.state === 'initialized' ? await pg.adopt().catch(() => null) : null;
    if (dataDir.state === 'initialized') {
      if (dataDir.standbySignal) node.sendRole({ type: 'DETECTED_REPLICA' });
      else node.sendRole({ type: adopted ? 'DETECTED_PRIMARY' : 'DETECTED_DEMOTED' });
    }
    if (adopted) {
      logger.info(`adopting running postmaster ${adopted.pid}`);
      node.postgres.send({
        type: 'ADOPT',
        timeoutMs: startTimeoutOf(node, dataDir.standbySignal ? 'replica' : 'primary'),
      });
    }
    node.startSampling();
    this.loopDone = this.loop();
    const eventLog = this.deps.eventLog;
    void eventLog?.whenLoaded().then(() => this.stopped || node.scheduler.restore(eventLog));
  }

  /**
   * Stops the loop and the actors; PostgreSQL keeps running under its fence unless `stopPostgres`.
   * Says whether the member key must outlive the agent: it holds a leader's shutdown position.
   */
  async stop(stopPostgres = false): Promise<{ keepMemberKey: boolean }> {
    let keepMemberKey = false;
    const node = this.node;
    this.stopped = true;
    this.wake();
    await this.loopDone;
    node.stopCycling();
    for (const subscription of this.subscriptions) subscription.unsubscribe();
    if (stopPostgres && node.isPostmasterUp()) {
      await whileNotSyncStandby(node, async () => {
        // A primary with synchronous replication on: `primary_stop_timeout` when set, as the reference's shutdown.
        const stopMs = shutdownStopDeadlineMs(node.lock.held, node.dynamic, pgCtlTimeoutOf(node));
        node.postgres.send({ type: 'STOP', mode: 'fast', timeoutMs: stopMs });
        await waitFor(node.postgres, (s) => !['running', 'stopping'].includes(topLevelState(s.value)), {
          timeout: stopMs + 5000,
        }).catch(() => undefined);
      });
      if (node.lock.held) {
        keepMemberKey = await publishShutdownPosition(node);
        await node.lock.release('shutdown');
      }
    }
    // Paused, as the reference: PostgreSQL is left running and nothing ends its term (maintenance is the
    // operator's). A crashed agent, which says nothing, still leaves the fence to stop it at the lease's end.
    if (!stopPostgres && node.dynamic.pause) node.deps.pg.disarmFence();
    node.stopActors();
    return { keepMemberKey };
  }

  /**
   * What the fence did on its own (a dead or frozen agent's term ended) goes to the node's log. Read every
   * cycle (one rename of a file that is almost never there): a fence still revoking when this agent
   * started writes its last steps after the adoption.
   */
  private recordFenceJournal(): void {
    for (const entry of this.deps.pg.takeFenceJournal()) this.node.events.recordFenceStep(entry);
  }

  /** Ends the current wait: the next cycle starts now (or right after the running one). */
  wake(): void {
    this.wakePending = true;
    this.wakeUp?.();
  }

  view(): NodeView {
    return nodeViewOf(this.node, this.deps.clock, this.lastCycleAt);
  }

  /** The long action in progress, if any: a task of the loop or an action of the postgres machine. */
  activity(): string | null {
    return this.node.activity();
  }

  /** Restarts PostgreSQL now (POST /restart); resolves with the outcome once it runs again or failed. */
  async restartNow(timeoutSeconds?: number): Promise<'restarted' | 'failed'> {
    let outcome: 'restarted' | 'failed' = 'failed';
    const node = this.node;
    // The restart's stop and its start each have the start's timeout (postgres-actors.ts).
    const startMs = timeoutSeconds ? timeoutSeconds * 1000 : startTimeoutOf(node, 'primary');
    const deadlineMs = procedureDeadlineMs({ kind: 'restart', stopMs: startMs, startMs }, node.dynamic.ttl);
    await this.runTaskAndWait(
      'restart',
      async (signal) => {
        outcome = await whileNotSyncStandby(node, () => restart(node, timeoutSeconds, signal));
      },
      deadlineMs,
    );
    return outcome;
  }

  /** Throws the data directory away and clones it again from the leader (POST /reinitialize). */
  startReinitialize(source: UpstreamNode): void {
    this.runTask('reinitialize', () => reinitialize(this.node, source));
  }

  /** Reads the DCS now, so that a read after an acknowledged write sees it (GET /config after PATCH). */
  async refreshClusterView(): Promise<ClusterView> {
    const cluster = await this.deps.dcs.read();
    this.node.observeCluster(cluster, this.deps.clock.monotonic());
    return cluster;
  }

  /** POST /failsafe: see NodeOperations.acceptFailsafe. */
  acceptFailsafe(call: FailsafeCall): OperationAnswer {
    const node = this.node;
    if (!node.dynamic.failsafe_mode) return { status: 502, text: 'failsafe mode is not enabled' };
    if (node.pgState() === 'running' && node.sampler.sample?.inRecovery === false)
      return { status: 500, text: 'Running as a leader' };
    node.failsafe.accept(call, this.deps.clock.monotonic());
    // The reference's `lsn` header: this member's received/replayed WAL position, as its last reading found it.
    const position = node.sampler.sample?.inRecovery ? node.sampler.sample.walPosition : 0;
    return { status: 200, text: 'Accepted', ...(position > 0 ? { headers: { lsn: String(position) } } : {}) };
  }

  /** POST /reload: the configuration file is read again at the next cycle, as on SIGHUP. */
  requestReload(): void {
    this.reloadRequested = true;
    for (const watcher of this.reloadWatchers) watcher.requested();
  }

  /** Told when a reload is requested and when the cycle has read the file again (systemd's RELOADING=1, READY=1). */
  watchReloads(watcher: ReloadWatcher): void {
    this.reloadWatchers.push(watcher);
  }

  scheduleRestart(restart: ScheduledRestart): boolean {
    return this.node.scheduler.schedule(restart);
  }

  cancelScheduledRestart(reason?: string): boolean {
    return this.node.scheduler.cancel(reason);
  }

  /** Runs one cycle at `at` (a scheduled operation), besides the regular ones. */
  wakeAt(at: number): void {
    this.node.scheduler.wakeAt(at);
  }

  memberData() {
    return memberKeyOf(this.node);
  }

  /** Appends a cluster fact (switchover requested, config changed...) to the event log. */
  recordCluster(type: string, cause: string, data: Record<string, unknown> = {}): void {
    this.node.events.recordCluster(type, cause, data);
  }

  private async loop(): Promise<void> {
    const { clock, logger } = this.deps;
    while (!this.stopped) {
      // The period is measured on the monotonic clock: a wall clock set back must not stretch it past the lease.
      const startedAt = clock.monotonic();
      this.wakePending = false;
      // The cycle's DCS calls share one retry_timeout: with the DCS down a cycle costs about that, as the reference's.
      await withinDcsBudget(new DcsBudget(this.node.dynamic.retry_timeout * 1000), () => this.cycle());
      if (this.stopped) break;
      const wait = startedAt + this.node.dynamic.loop_wait * 1000 - clock.monotonic();
      if (wait <= 0) {
        logger.warning('Loop time exceeded, rescheduling immediately.');
        continue;
      }
      if (this.wakePending) continue;
      await new Promise<void>((resolve) => {
        const cancel = clock.setTimer(resolve, wait);
        this.wakeUp = () => {
          cancel();
          resolve();
        };
      });
      this.wakeUp = null;
    }
  }

  /** One HA cycle; never throws. */
  private async cycle(): Promise<void> {
    const { dcs, logger, clock } = this.deps;
    const node = this.node;
    try {
      this.lastCycleAt = clock.monotonic();
      if (this.reloadRequested) {
        this.reloadRequested = false;
        reloadLocalConfig(node);
        for (const watcher of this.reloadWatchers) watcher.done();
      }
      this.recordFenceJournal();
      // Bounded: a hung server's reading waits out its statement timeout, twice when one was already in flight, and
      // the cycle that ends the server's term would come that much later (12 s after a hang instead of 6, in chaos).
      if (node.pgState() === 'running') await node.sampler.takeWithin(CYCLE_READING_WAIT_MS);
      if (!node.isPostmasterUp())
        node.remember({ type: 'DATA_DIR_INSPECTED', dataDir: await this.deps.pg.inspectDataDir() });

      // Beside the read, which a slow etcd makes long: the lock's keepalive. Not before the PostgreSQL sample: the lock
      // counts from the keepalive's send, and a sample stuck on statement_timeout would eat into it.
      if (node.lock.held) dcs.startLeaderRefresh();
      const { cluster, dcsError } = await readCluster(node, this.dynamicConfig);

      trackReadPool(node, clock.now());
      checkWatchdog(node);
      const wallJump = this.wallClockJumps.observe();
      if (wallJump.note) logger.warning(wallJump.note);
      let snapshot: HaSnapshot = {
        ...snapshotOf(node, cluster, dcsError, clock),
        wallJumpMs: wallJump.jumpMs,
        raceBackoff: this.raceBackoffState(cluster),
      };
      let decision = decide(snapshot);
      for (let step = 0; 'need' in decision && step < 4; step++) {
        snapshot = await fulfilNeed(this.node, decision.need, snapshot);
        decision = decide(snapshot);
      }
      if ('need' in decision) throw new Error(`decide() still needs ${decision.need}`);

      if (cluster && !node.dynamic.pause && node.activity() === null)
        node.scheduler.evaluate(this.view(), node.dynamic.loop_wait, wallJump.jumpMs);

      for (const note of decision.notes ?? []) logger.info(note);
      (this.deps.verdictLogger ?? logger).info((node.dynamic.pause ? 'PAUSE: ' : '') + decision.verdict);
      node.events.recordVerdict(decision.verdict);
      for (const action of decision.actions)
        await executeAction(node, action, snapshot, (name, work, deadlineMs) => this.runTask(name, work, deadlineMs));
      // After the actions, and only when the postgres machine is idle: sent first, a reload would race a `follow`
      // action's own reconfiguration (the machine starts the second while the first still writes its files, and the
      // file without an upstream could be the one PostgreSQL reads: seen after an agent restart beside its replica).
      applyChangedParameters(this.node, this.deps.logger);

      if (cluster)
        await dcs
          .touchMember(memberKeyOf(node))
          .catch((e) => logger.warning(`failed to update member key: ${errorText(e)}`));
      node.lock.keepFence();
    } catch (error) {
      logger.error(`HA cycle failed: ${errorText(error)}`);
    }
  }

  /** For `primary_race_backoff`: since when no leader key is seen, and the WAL position one cycle ago (this cycle's kept for the next). */
  private raceBackoffState(cluster: ClusterView | null): RaceBackoffState {
    const now = this.deps.clock.monotonic();
    if (cluster) this.noLeaderSince = cluster.leader ? 0 : this.noLeaderSince || now;
    const previousWalPosition = this.lastCycleWalPosition;
    this.lastCycleWalPosition = this.node.sampler.sample?.walPosition ?? null;
    return { noLeaderSince: wallTimeOf(this.deps.clock, this.noLeaderSince), previousWalPosition };
  }

  /** Runs a multi-step PostgreSQL action in the background; the loop reports it as in progress. */
  private runTask(name: string, work: ProcedureWork, deadlineMs: number | null = null): void {
    void this.runTaskAndWait(name, work, deadlineMs);
  }

  /** A task may outlive the cycle that starts it (a scheduled restart too): its DCS calls have their own retry_timeout each. */
  private runTaskAndWait(name: string, work: ProcedureWork, deadlineMs: number | null = null): Promise<void> {
    return outsideDcsBudget(() => this.performTask(name, work, deadlineMs));
  }

  /**
   * The task machine invokes the work as its `procedure` actor (task-procedure.ts), which records how it
   * ended; at its deadline the machine gives it up. Resolves once the work settled, and wakes the cycle.
   */
  private performTask(name: string, work: ProcedureWork, deadlineMs: number | null): Promise<void> {
    return new Promise((resolve) => {
      this.node.task.send({
        type: 'TASK_STARTED',
        task: name,
        at: this.deps.clock.monotonic(),
        deadlineMs,
        run: work,
        settled: () => {
          this.wake();
          resolve();
        },
      });
    });
  }
}
