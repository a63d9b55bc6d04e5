import { sleep } from '../common/clock';
import { errorText } from '../common/error-text';
import { DynamicConfig } from '../dcs/dcs.port';
import { HaSnapshot, promotedAndCheckpointed, upstreamOf } from './cluster-snapshot';
import { HaAction } from './decide';
import { demoteToArchive } from './cluster-demotion';
import { keepSlots } from './slot-keeper';
import { planSlots } from './slot-plan';
import { failsafeLeaderView, failsafeView } from './failsafe/failsafe-view';
import { drainBeforeDemotion, drainBeforePromotion, withdrawPrimaryChecks } from './load-balancer-drain';
import { keepLogicalSlotCopies } from './logical-slot-copies';
import { NodeActors } from './node-actors';
import { publishFailsafe } from './failsafe/failsafe-rounds';
import {
  demoteStopDeadlineMs,
  primaryStopTimeoutMs,
  procedureDeadlineMs,
  promoteTimeoutMs,
} from './postgres-deadlines';
import {
  bootstrapStandbyLeader,
  cloneFrom,
  promote,
  rejoin,
  removeData,
  startAsReplica,
  stopServer,
} from './postgres-procedures';
import { pgCtlTimeoutOf, settingsFor, startRequest, startTimeoutOf } from './postgres-settings';
import { ProcedureWork } from './task.machine';
import { configWithoutDcs } from './dynamic-config-apply';
import { watchdogBeforePromotion } from './watchdog-checks';
import { CYCLE_READING_WAIT_MS } from './sampler';

/** After SIGKILL of a hung server, how long its exit may take to reach the postgres machine through the fence. */
const KILL_EXIT_WAIT_MS = 5_000;
/** The cycle reads PostgreSQL milliseconds before it keeps the slots; an older reading is not trusted for them. */
const SLOTS_READING_MAX_AGE_MS = 1_000;

/**
 * Runs a multi-step procedure in the background (the task machine's invoked `procedure`); the loop reports
 * it as in progress. With a deadline (procedureDeadlineMs) it is given up then, its `signal` aborted.
 */
export type TaskRunner = (name: string, work: ProcedureWork, deadlineMs?: number | null) => void;

/** Carries out one action decide() returned: a machine event, a DCS write, or a background task. */
export async function executeAction(
  node: NodeActors,
  action: HaAction,
  snapshot: HaSnapshot,
  runTask: TaskRunner,
): Promise<void> {
  const { dcs, config, pg, query, logger } = node.deps;
  switch (action.type) {
    case 'initdb':
      node.remember({ type: 'BOOTSTRAP_STARTED' });
      node.sendRole({ type: 'BOOTSTRAP_STARTED' });
      node.events.recordCluster(
        'cluster.bootstrap_started',
        `won the initialize race: bootstrapping by ${config.bootstrap.method}`,
        { method: config.bootstrap.method },
      );
      if (config.bootstrap.method !== 'initdb') {
        const method = config.bootstrap.methods[config.bootstrap.method];
        const settings = {
          ...settingsFor(node, 'primary', null),
          ...(method.recovery_conf ? { recovery: method.recovery_conf } : {}),
          ...(method.keep_existing_recovery_conf ? { keepExistingRecoveryConf: true } : {}),
        };
        node.postgres.send({ type: 'CUSTOM_BOOTSTRAP', method, start: startRequest(node, settings) });
      } else {
        node.postgres.send({ type: 'INITDB' });
      }
      return;
    case 'clone':
      return runTask('clone', async () => {
        await cloneFrom(node, action.source);
      });
    case 'bootstrapStandbyLeader':
      return runTask('bootstrap_standby_leader', () =>
        bootstrapStandbyLeader(
          node,
          action.remote,
          config.bootstrap.dcs as DynamicConfig,
          Boolean(snapshot.cluster?.config),
        ),
      );
    case 'becomeStandbyLeader':
      node.sendRole({ type: 'STANDBY_LEADER' });
      return;
    case 'startPrimary':
      node.setUpstream(null);
      node.postgres.send({ type: 'START', start: startRequest(node, settingsFor(node, 'primary', null)) });
      return;
    case 'startReplica':
      return runTask(
        'start',
        (signal) => startAsReplica(node, action.upstream, signal),
        procedureDeadlineMs({ kind: 'start', startMs: startTimeoutOf(node, 'primary') }, node.dynamic.ttl),
      );
    case 'rejoin':
      return runTask('rejoin', () => rejoin(node, action.upstream, action.useRewind));
    case 'promote':
      if (!(await node.sync.beforePromote(snapshot.cluster, node.dynamic))) {
        logger.info('Postponing promotion because synchronous replication state was updated by somebody else');
        return;
      }
      return runTask(
        'promote',
        async (signal) => {
          if (action.drainMs > 0 && !(await drainBeforePromotion(node, action.drainMs))) return;
          await watchdogBeforePromotion(node);
          await promote(node, signal);
        },
        procedureDeadlineMs(
          {
            kind: 'promote',
            drainMs: Math.max(0, action.drainMs),
            promoteMs: promoteTimeoutMs(node.dynamic.loop_wait, pgCtlTimeoutOf(node)),
          },
          node.dynamic.ttl,
        ),
      );
    case 'follow':
      node.setUpstream(action.upstream.name);
      node.postgres.send({ type: 'RECONFIGURE', settings: settingsFor(node, 'replica', action.upstream) });
      if (node.roleName() === 'demoted') node.sendRole({ type: 'FOLLOWING' });
      return;
    case 'demote':
      // Failsafe mode kept the lock through the DCS failure until the members were asked; now it goes.
      if ((!snapshot.cluster || snapshot.lockResult === 'dcs_unreachable') && node.lock.held) {
        node.lock.lost(`DCS is not accessible: ${snapshot.dcsError ?? 'the leader lock refresh got no answer'}`);
      }
      return runTask(
        'demote',
        async (signal) => {
          withdrawPrimaryChecks(node, 'demoting: stops taking writes now');
          // A fast shutdown waits for WAL senders, which hang when the replicas are cut off: past half a ttl it
          // escalates to an immediate shutdown, then SIGKILL (the adapter), well before another node may be promoted.
          // With synchronous replication on, `primary_stop_timeout` may shorten that.
          node.postgres.send({ type: 'STOP', mode: action.mode, timeoutMs: demoteStopDeadlineMs(node.dynamic) });
          await node.waitForPostgres((state) => !['running', 'stopping'].includes(state), undefined, signal);
          if (!action.restart) return;
          if (action.upstream) await rejoin(node, action.upstream, node.dynamic.use_pg_rewind);
          else await startAsReplica(node, null, signal);
        },
        // A demotion that rejoins may rewind or clone: that runs as long as the copy takes (no deadline).
        action.restart && action.upstream
          ? null
          : procedureDeadlineMs(
              {
                kind: action.restart ? 'restart' : 'stop',
                stopMs: demoteStopDeadlineMs(node.dynamic),
                startMs: startTimeoutOf(node, 'primary'),
              },
              node.dynamic.ttl,
            ),
      );
    case 'demoteToArchive':
      return runTask('demote', () => demoteToArchive(node, action.remote));
    case 'rewindReplica':
      return runTask('rejoin', async () => {
        // A failed task: the next try waits a backoff (recover.ts), and the log says no pg_rewind ran.
        if (!(await pg.upstreamReachable(action.upstream))) {
          throw new Error(
            `not rewinding from ${action.upstream.name} now: it does not accept connections; nothing was run`,
          );
        }
        await stopServer(node, 'fast');
        await rejoin(node, action.upstream, node.dynamic.use_pg_rewind);
      });
    case 'releaseLock':
      if (action.demote && ['primary', 'promoted', 'standby_leader'].includes(node.roleName())) {
        node.sendRole({ type: action.demote === 'failed_start' ? 'GAVE_UP_AFTER_FAILED_START' : 'DEMOTED' });
      }
      await node.lock.release(snapshot.dcsError ?? 'voluntary release');
      return;
    case 'finishBootstrap':
      return runTask('post_bootstrap', async () => {
        try {
          await pg.postBootstrap();
        } catch (error) {
          // As the reference: a cluster whose post_bootstrap failed is not handed out; the supervisor decides.
          await abandonBootstrap(node, `failed to bootstrap the cluster: post_bootstrap failed: ${errorText(error)}`);
          return;
        }
        const sysid = node.sampler.sample?.systemIdentifier ?? (await pg.inspectDataDir()).systemIdentifier ?? '';
        await dcs.initialize(sysid, false);
        if (!snapshot.cluster?.config) await dcs.setConfig(config.bootstrap.dcs as DynamicConfig, 'absent');
        await node.lock.force('initialized a new cluster');
        node.events.recordCluster('cluster.initialized', 'initialized a new cluster', {
          system_identifier: sysid,
          method: config.bootstrap.method,
        });
        node.remember({ type: 'BOOTSTRAP_ENDED' });
      });
    case 'abandonBootstrap':
      return runTask('abandon_bootstrap', () =>
        abandonBootstrap(
          node,
          `failed to bootstrap the cluster: ${snapshot.local.lastError ?? snapshot.local.pgState}`,
        ),
      );
    case 'writeInitialize': {
      const sysid = node.dataDir?.systemIdentifier ?? node.sampler.sample?.systemIdentifier;
      if (sysid) await dcs.initialize(sysid, true).catch(() => false);
      return;
    }
    case 'writeConfig':
      await dcs.setConfig(configWithoutDcs(node), 'absent').catch(() => false);
      return;
    case 'clearFailover': {
      const cleared = await dcs.setFailover({}).catch(() => false);
      const request = snapshot.cluster?.failover?.value;
      if (cleared && action.fate && request?.scheduled_at)
        node.events.recordCluster(`switchover.${action.fate}`, node.events.verdict, { ...request });
      return;
    }
    case 'leaderDuties': {
      // A server silent through this cycle's reading is asked nothing more: each question (the slots, the synchronous
      // standbys) would wait out its own timeout, and the next cycle, which ends a hung server's term, with it.
      const answers = node.sampler.answeredWithin(CYCLE_READING_WAIT_MS);
      if (!answers) logger.info('leader duties skipped this cycle: PostgreSQL did not answer its reading');
      const sample = node.sampler.sample;
      if (answers)
        await node.leaderDuties.perform(
          snapshot.cluster,
          sample,
          node.dynamic,
          node.sampler.slotsReadWithin(SLOTS_READING_MAX_AGE_MS),
        );
      await publishFailsafe(node, snapshot.cluster).catch((e) =>
        logger.warning(`writing the failsafe key failed: ${errorText(e)}`),
      );
      if (answers && snapshot.cluster && sample && !sample.inRecovery)
        await node.sync.manage(snapshot.cluster, sample, node.dynamic);
      return;
    }
    case 'serveDownstreams': {
      // A replica keeps the other members' slots and the permanent ones too, at the leader's
      // positions, so that whichever node is promoted already holds the WAL its consumers need.
      const { dynamic } = node;
      // While the DCS is down: the last view read, at the positions the failsafe leader sent.
      const cluster =
        snapshot.cluster ??
        failsafeView(node.cluster, node.failsafe.leaderAccepted(node.deps.clock.monotonic(), dynamic.ttl));
      if (!cluster) return;
      const plan = planSlots({ self: { name: node.name, tags: node.tags }, isLeader: false, cluster, dynamic });
      await keepSlots(
        { query, events: node.events, logger },
        plan,
        dynamic,
        node.sampler.slotsReadWithin(SLOTS_READING_MAX_AGE_MS),
        cluster.leader !== null,
      );
      if (plan.logical.length > 0)
        await keepLogicalSlotCopies(node, snapshot, cluster, plan.logical, runTask).catch((e) =>
          logger.warning(`keeping logical slot copies failed: ${errorText(e)}`),
        );
      return;
    }
    case 'demoteGraceful': {
      const request = snapshot.cluster?.failover?.value;
      if (request?.scheduled_at) node.events.recordCluster('switchover.executed', node.events.verdict, { ...request });
      const stopMs = primaryStopTimeoutMs(node.dynamic) ?? pgCtlTimeoutOf(node);
      return runTask(
        'switchover',
        async (signal) => {
          await drainBeforeDemotion(node);
          withdrawPrimaryChecks(node, 'switchover: demoting after the drain');
          // A checkpoint first makes the shutdown checkpoint, and so the stop, short.
          await query.checkpoint().catch(() => undefined);
          // As the reference's switchover: with synchronous replication on, `primary_stop_timeout` bounds the stop
          // (a WAL sender waiting for a standby that does not answer holds a fast shutdown), then it escalates.
          await stopServer(node, 'fast', stopMs, signal);
          await node.lock.release('switchover: demoting myself');
          // Paused, no HA cycle starts PostgreSQL again: as the reference, the demotion itself follows the new leader.
          if (node.dynamic.pause) await followAfterDemotion(node);
        },
        // Paused, the demotion follows the new leader, which may rewind or clone: no deadline then.
        node.dynamic.pause
          ? null
          : procedureDeadlineMs(
              { kind: 'switchover', drainMs: node.dynamic.load_balancer_drain_ms, stopMs },
              node.dynamic.ttl,
            ),
      );
    }
    case 'wakeAt':
      node.scheduler.wakeAt(action.at);
      return;
    case 'holdInFailsafe':
      node.lock.holdInFailsafe(action.until);
      return;
    case 'keepSlotsInFailsafe': {
      const cluster = failsafeLeaderView(node.cluster, node.failsafe.memberPositions());
      const sample = node.sampler.sample;
      if (cluster && sample)
        await node.leaderDuties.keepSlotsOnly(
          cluster,
          sample,
          node.dynamic,
          node.sampler.slotsReadWithin(SLOTS_READING_MAX_AGE_MS),
        );
      return;
    }
    case 'killPostgres':
      // Only once every process is gone may the lock go: a server that wakes up must find nobody to write for it.
      await pg.killProcessTree();
      await node.waitForPostgres((state) => state !== 'running', KILL_EXIT_WAIT_MS);
      return;
  }
}

/** Gives the initialize key back, removes the half-made cluster and stops the agent. */
async function abandonBootstrap(node: NodeActors, reason: string): Promise<void> {
  node.events.recordCluster('cluster.bootstrap_failed', reason, { method: node.deps.config.bootstrap.method });
  await node.deps.dcs.cancelInitialization();
  node.remember({ type: 'BOOTSTRAP_ENDED' });
  if (node.isPostmasterUp()) await stopServer(node, 'immediate');
  await removeData(node);
  // Retrying at once would fail the same way; the reference exits and lets the supervisor decide.
  node.deps.onFatal?.(reason);
}

/**
 * Rewinds onto the new leader if needed and starts as its replica. pg_rewind compares pg_control
 * timelines, which the new leader updates only at its first checkpoint after the promotion: so the
 * wait is for the key and for that checkpoint (the member key says so), at most a ttl.
 */
async function followAfterDemotion(node: NodeActors): Promise<void> {
  const { clock, dcs } = node.deps;
  const deadline = clock.monotonic() + node.dynamic.ttl * 1000;
  const readLeader = async () => {
    const cluster = await dcs.read().catch(() => null);
    const member = cluster?.members.find((m) => m.name === cluster.leader?.value);
    return member && member.name !== node.name ? member : null;
  };
  let leader = await readLeader();
  while (!promotedAndCheckpointed(leader ?? undefined) && clock.monotonic() < deadline) {
    await sleep(clock, 100);
    leader = await readLeader();
  }
  const upstream = upstreamOf(leader ?? undefined);
  if (upstream) await rejoin(node, upstream, node.dynamic.use_pg_rewind);
  else await startAsReplica(node, null);
}
