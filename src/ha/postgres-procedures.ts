import { waitFor } from 'xstate';
import { errorText } from '../common/error-text';
import { methodFlag } from '../config/custom-methods-config';
import { UpstreamNode } from '../postgresql/postgres.port';
import { activeSubstate, NodeActors } from './node-actors';
import { replicaMethodPlan } from './replica-methods';
import { promoteTimeoutMs } from './postgres-deadlines';
import { mayRemoveDataAfterFailedRewind, startFailureSummary } from './start-failure';
import {
  currentSettings,
  parametersChanged,
  pgCtlTimeoutOf,
  removesDataDirectoryOn,
  settingsFor,
  startRequest,
} from './postgres-settings';
import { memberKeyOf } from './node-member-key';

/**
 * The multi-step PostgreSQL procedures of a node: each is a sequence of postgres-machine events
 * and role transitions, waiting for the machine between steps. They run as the HA cycle's
 * background tasks; none changes state except through a machine.
 */

/**
 * Builds the data directory by each replica method in turn (`create_replica_methods`: pg_basebackup
 * from `source`, or a custom command such as a backup restore), until one succeeds; false (logged)
 * when every one failed. Each attempt is a recorded clone of the postgres machine and a node event
 * with its method, duration and exit code.
 */
export async function cloneFrom(
  node: NodeActors,
  source: UpstreamNode | null,
  methods?: string[] | null,
): Promise<boolean> {
  const { clock, logger } = node.deps;
  let keptDataLeft = false;
  for (const step of replicaMethodPlan(
    node.config.postgresql,
    source !== null,
    methods ?? node.config.postgresql.create_replica_methods,
  )) {
    // pg_basebackup needs an empty directory: what a failed keep_data method left there goes first, as with Patroni.
    if (keptDataLeft && !('method' in step)) await removeData(node);
    const startedAt = clock.monotonic();
    node.postgres.send({ type: 'CLONE', source, ...('method' in step ? { method: step.method } : {}), at: startedAt });
    await node.waitForPostgres((state) => state !== 'creating_replica');
    const { lastOutcome, lastError, lastExitCode } = node.postgres.getSnapshot().context;
    const attempt = {
      method: step.name,
      source: source?.name ?? null,
      durationMs: Math.round(clock.monotonic() - startedAt),
    };
    if (lastOutcome === 'cloned') {
      logger.info(`replica has been created using ${step.name}`);
      // Patroni's line, which its site-aware acceptance scenario looks for.
      if (source)
        logger.info(
          `bootstrapped from ${source.name === node.cluster?.leader?.value ? 'leader' : 'replica'} '${source.name}'`,
        );
      node.events.recordCluster('replica.created', `replica created using ${step.name}`, { ...attempt, exitCode: 0 });
      node.remember({ type: 'DATA_DIR_INSPECTED', dataDir: await node.deps.pg.inspectDataDir() });
      node.sendRole({ type: 'CLONE_COMPLETED' });
      return true;
    }
    keptDataLeft = 'method' in step && methodFlag(step.method.options, 'keep_data');
    logger.error(`Error creating replica using method ${step.name}: ${lastError}`);
    node.events.recordCluster('replica.method_failed', `replica method ${step.name} failed`, {
      ...attempt,
      exitCode: lastExitCode,
      error: lastError,
    });
  }
  return false;
}

/** Starts as a replica of `upstream`; `signal` (the task's deadline) ends the wait for the start. */
export async function startAsReplica(
  node: NodeActors,
  upstream: UpstreamNode | null,
  signal?: AbortSignal,
): Promise<void> {
  const role = node.roleName();
  if (role === 'primary' || role === 'promoted') node.sendRole({ type: 'DEMOTED' });
  node.setUpstream(upstream?.name ?? null);
  node.postgres.send({ type: 'START', start: startRequest(node, settingsFor(node, 'replica', upstream)) });
  await node.waitForPostgres((state) => state !== 'starting', undefined, signal);
  if (node.pgState() !== 'running') return;
  if (node.roleName() === 'demoted') node.sendRole({ type: 'FOLLOWING' });
  // A first reading at once: health checks answer from it, and a replica is in the read pool as soon as it runs.
  await node.sampler.take().catch(() => undefined);
}

/** Stops a running server and waits until it is down. */
export async function stopServer(
  node: NodeActors,
  mode: 'fast' | 'immediate',
  timeoutMs = pgCtlTimeoutOf(node),
  signal?: AbortSignal,
): Promise<void> {
  node.postgres.send({ type: 'STOP', mode, timeoutMs });
  await node.waitForPostgres((state) => !['running', 'stopping'].includes(state), undefined, signal);
}

/**
 * A former primary joins the leader: pg_rewind, or a fresh clone when rewind is off or fails.
 * Nothing is removed while the leader does not answer: a dead leader is no reason to lose data, nor when
 * `remove_data_directory_on_*` says not to (see removalAfterRewind).
 */
export async function rejoin(node: NodeActors, upstream: UpstreamNode, useRewind: boolean): Promise<void> {
  const { pg, logger } = node.deps;
  // A failed task: the next try waits a backoff (recover.ts), and the log says no pg_rewind ran.
  if (!(await pg.upstreamReachable(upstream)))
    throw new Error(`not rejoining ${upstream.name} now: it does not accept connections; nothing was run`);
  let rewound = false;
  if (useRewind) {
    // pg_rewind reads the source's timeline from its pg_control, which a standby (a standby leader) updates only
    // at its next restartpoint, and a promoted primary at its first checkpoint: without one it may see no fork.
    await pg
      .checkpointOn(upstream)
      .catch((e) => logger.warning(`checkpoint on ${upstream.name} before pg_rewind failed: ${errorText(e)}`));
    const info = await pg.inspectDataDir();
    const cleanShutdown = info.clusterState === 'shut down' || info.clusterState === 'shut down in recovery';
    node.postgres.send({ type: 'REWIND', source: upstream, crashRecovery: !cleanShutdown });
    await node.waitForIdleStop();
    const { lastOutcome, lastError } = node.postgres.getSnapshot().context;
    rewound = lastOutcome === 'rewound' || lastOutcome === 'not_needed';
    if (!rewound && !(await pg.upstreamReachable(upstream))) {
      // A failed task, so the next try waits a backoff rather than the next cycle.
      throw new Error(
        `pg_rewind from ${upstream.name} failed and it no longer answers; keeping the data directory: ${lastError}`,
      );
    }
    if (!rewound && !mayRemoveDataAfterFailedRewind(lastError)) {
      // A failed task, retried after a backoff: once space is freed the same rewind succeeds.
      node.events.recordCluster(
        'rejoin.deferred',
        `pg_rewind from ${upstream.name} failed for want of space: keeping the data directory, trying again after a backoff`,
        {
          source: upstream.name,
          error: startFailureSummary(lastError),
        },
      );
      throw new Error(
        `pg_rewind from ${upstream.name} failed for want of space; keeping the data directory: ${lastError}`,
      );
    }
    if (!rewound && !removalAfterRewind(node, true)) {
      // A failed task, retried after a backoff; the data directory stays for an operator (POST /reinitialize).
      throw new Error(
        `pg_rewind from ${upstream.name} failed and remove_data_directory_on_rewind_failure is off: keeping the data directory (reinitialize this member to clone it again): ${lastError}`,
      );
    }
    if (!rewound) logger.warning(`pg_rewind from ${upstream.name} failed, reinitializing: ${lastError}`);
    if (lastOutcome === 'rewound')
      await pg
        .checkpointOn(upstream)
        .catch((e) => logger.warning(`checkpoint on ${upstream.name} after pg_rewind failed: ${errorText(e)}`));
  }
  if (!useRewind && !removalAfterRewind(node, false)) {
    // As the reference: without pg_rewind and without leave to remove the data, start as a replica as it is.
    logger.warning(
      `use_pg_rewind and remove_data_directory_on_diverged_timelines are off: starting as a replica of ${upstream.name} without reinitializing`,
    );
  } else if (!rewound) {
    await removeData(node);
    if (!(await cloneFrom(node, upstream)))
      throw new Error(
        `could not clone ${upstream.name} after pg_rewind failed: ${node.postgres.getSnapshot().context.lastError ?? 'every replica method failed'}`,
      );
  }
  await startAsReplica(node, upstream);
  // A failed task, so the next try waits a backoff instead of rewinding again at once.
  if (node.pgState() !== 'running')
    throw new Error(
      `PostgreSQL did not start after joining ${upstream.name}: ${node.postgres.getSnapshot().context.lastError ?? node.pgState()}`,
    );
}

/**
 * Whether a former primary that pg_rewind could not bring back (`rewindFailed`), or that may not rewind
 * (use_pg_rewind off), may have its data directory removed and cloned again: the reference's
 * `remove_data_directory_on_rewind_failure` (either key, after a failed rewind) and
 * `remove_data_directory_on_diverged_timelines`. Both default to true in Stator.
 */
function removalAfterRewind(node: NodeActors, rewindFailed: boolean): boolean {
  const onDiverged = removesDataDirectoryOn(node, 'diverged_timelines');
  return rewindFailed ? removesDataDirectoryOn(node, 'rewind_failure') || onDiverged : onDiverged;
}

/** Removes the data directory (the server is down) and says so to the role machine. */
export async function removeData(node: NodeActors): Promise<void> {
  node.postgres.send({ type: 'REMOVE_DATA' });
  await node.waitForIdleStop();
  node.sendRole({ type: 'DATA_REMOVED' });
}

/**
 * Throws the data directory away and clones it again from `source` (POST /reinitialize). As with Patroni, a first
 * replica method with `keep_data` (`pgbackrest --delta restore`) is given the directory as it is, to copy only what differs.
 */
export async function reinitialize(node: NodeActors, source: UpstreamNode): Promise<void> {
  if (!(await node.deps.pg.upstreamReachable(source))) {
    node.deps.logger.warning(`not reinitializing: ${source.name} does not accept connections`);
    return;
  }
  if (node.isPostmasterUp()) {
    node.postgres.send({ type: 'STOP', mode: 'immediate', timeoutMs: pgCtlTimeoutOf(node) });
    await node.waitForPostgres((state) => !['running', 'stopping', 'starting'].includes(state));
  }
  const [first] = replicaMethodPlan(node.config.postgresql, true);
  if (!(first && 'method' in first && methodFlag(first.method.options, 'keep_data'))) await removeData(node);
  if (await cloneFrom(node, source)) await startAsReplica(node, source);
}

/** Promotes the running replica; `signal` (the task's deadline) ends its waits. */
export async function promote(node: NodeActors, signal?: AbortSignal): Promise<void> {
  const { dcs, logger, query, clock } = node.deps;
  // pg_control keeps the old timeline until the first checkpoint after promotion, and pg_rewind
  // on a former primary reads it: from now until that checkpoint the member key says so. Peers wait
  // for the key to say `primary`, which only a write from now on can, so it need not land first.
  node.remember({ type: 'CHECKPOINT_AFTER_PROMOTE_PENDING' });
  node.sendRole({ type: 'PROMOTE_STARTED' });
  // synchronous_standby_names as decided before the promotion is in the file the promoted server reads.
  if (parametersChanged(node)) {
    node.postgres.send({ type: 'RECONFIGURE', settings: currentSettings(node) });
    await waitFor(node.postgres, (s) => activeSubstate(s.value) !== 'reconfiguring', {
      timeout: 30_000,
      ...(signal ? { signal } : {}),
    });
  }
  node.postgres.send({ type: 'PROMOTE', timeoutMs: promoteTimeoutMs(node.dynamic.loop_wait, pgCtlTimeoutOf(node)) });
  // While PostgreSQL promotes (the write gap waits on nothing else): slots for the other members, the
  // former leader included (its member key may have gone with its lease: the history names it), exist
  // before they reconnect to us, or they retry only after wal_retrieve_retry_interval (5 s); and the
  // member key says what is happening.
  const cluster = node.cluster;
  if (cluster) node.sightings.see(cluster, clock.now(), { history: true });
  const slotsReady =
    node.dynamic.use_slots && cluster
      ? node.leaderDuties
          .syncMemberSlots(cluster, node.dynamic)
          .catch((e) => logger.warning(`creating member slots failed: ${errorText(e)}`))
      : Promise.resolve();
  const memberWritten = dcs.touchMember(memberKeyOf(node)).catch(() => undefined);
  await waitFor(node.postgres, (s) => activeSubstate(s.value) !== 'promoting', {
    timeout: 120_000,
    ...(signal ? { signal } : {}),
  });
  const { lastOutcome, lastError } = node.postgres.getSnapshot().context;
  if (lastOutcome !== 'promoted') {
    logger.error(`promote failed: ${lastError}`);
    node.sendRole({ type: 'PROMOTE_FAILED' });
    node.remember({ type: 'CHECKPOINT_AFTER_PROMOTE_DONE' });
    return;
  }
  node.setUpstream(null);
  await node.sampler.take();
  // The role (and `/primary`) follows the server at once: the slots and the member key write started above need
  // not land first (a crowded machine held /primary 15 s after PostgreSQL took writes, waiting on them).
  node.sendRole({ type: 'PROMOTE_COMPLETED' });
  node.events.recordCluster('leader.promoted', 'promoted self to leader', {
    timeline: node.sampler.sample?.timeline ?? null,
  });
  await Promise.all([slotsReady, memberWritten]);
  await query.checkpoint().catch((e) => logger.warning(`checkpoint after promote failed: ${errorText(e)}`));
  node.remember({ type: 'CHECKPOINT_AFTER_PROMOTE_DONE' });
}

/** Restarts PostgreSQL now (POST /restart): fast stop, same settings, start; a stopped server is started, as the reference does. */
export async function restart(
  node: NodeActors,
  timeoutSeconds?: number,
  signal?: AbortSignal,
): Promise<'restarted' | 'failed'> {
  const start = startRequest(node, currentSettings(node));
  if (timeoutSeconds) start.timeoutMs = timeoutSeconds * 1000;
  if (node.pgState() === 'running') {
    node.postgres.send({ type: 'RESTART', start, mode: 'fast' });
    await node.waitForPostgres((state) => state !== 'restarting', undefined, signal);
  } else {
    node.postgres.send({ type: 'START', start });
    await node.waitForPostgres((state) => state !== 'starting', undefined, signal);
  }
  if (node.pgState() !== 'running') return 'failed';
  // The answer and the status document agree: the reading of the server from before the restart is replaced now.
  await node.sampler.take().catch(() => undefined);
  return 'restarted';
}

/**
 * A leader that stopped cleanly says where its WAL ends before it gives the lock up: `/status` gets
 * the shutdown checkpoint's location (as the reference's `delete_leader(last_lsn)`), and its member
 * key, left to expire after the agent exits, shows it too (NodeActors.shutdownCheckpoint).
 */
export async function publishShutdownPosition(node: NodeActors): Promise<boolean> {
  const { dcs, pg, logger } = node.deps;
  node.remember({ type: 'DATA_DIR_INSPECTED', dataDir: await pg.inspectDataDir().catch(() => node.dataDir) });
  const checkpoint = node.dataDir?.clusterState === 'shut down' ? node.dataDir.checkpointLsn : undefined;
  if (checkpoint === undefined) return false;
  node.remember({ type: 'LEAVING_STARTED' });
  try {
    // The site stays in /status: the members racing next prefer the stopped leader's site (docs/sites.md).
    await dcs.setStatus({ optime: checkpoint, ...(node.config.site ? { current_site: node.config.site } : {}) });
    // A fresh keepalive: the key outlives the agent by a whole ttl, not by what was left of the last one.
    await dcs.touchMember(memberKeyOf(node), { renewLease: true });
    logger.info(`published the shutdown checkpoint at ${checkpoint} on timeline ${node.dataDir!.timeline}`);
    return true;
  } catch (error) {
    logger.warning(`could not publish the shutdown checkpoint: ${errorText(error)}`);
    return false;
  }
}

/**
 * The first member of a standby cluster (reference: `trying to bootstrap a new standby leader`):
 * builds its data directory from the remote primary by `standby_cluster.create_replica_methods`
 * (pg_basebackup by default, or a custom method such as a restore from the remote's backups), starts
 * streaming from it, then writes `initialize` and `/config` and takes the leader key as the standby
 * leader. A clone or start that fails gives the initialize key back and fails the task, so the next
 * try waits a backoff.
 */
export async function bootstrapStandbyLeader(
  node: NodeActors,
  remote: UpstreamNode,
  bootstrapDcs: Record<string, unknown>,
  configStored: boolean,
): Promise<void> {
  const { dcs } = node.deps;
  node.events.recordCluster(
    'cluster.bootstrap_started',
    `won the initialize race: building a standby cluster from ${remote.name}`,
    { remote: remote.name },
  );
  // An archive-only standby cluster has no primary to copy: only a `no_leader` method (a backup restore) can build it.
  const source = remote.host ? remote : null;
  if (!(await cloneFrom(node, source, node.dynamic.standby_cluster?.create_replica_methods ?? ['basebackup']))) {
    const { lastError } = node.postgres.getSnapshot().context;
    await dcs.cancelInitialization().catch(() => undefined);
    await removeData(node);
    const why = source
      ? (lastError ?? 'unknown error')
      : 'an archive-only standby cluster is built by a create_replica_methods method with no_leader (a backup restore)';
    throw new Error(`could not build the standby leader from ${remote.name}: ${why}`);
  }
  await startAsReplica(node, remote);
  if (node.pgState() !== 'running') {
    await dcs.cancelInitialization().catch(() => undefined);
    throw new Error(
      `the standby leader did not start: ${node.postgres.getSnapshot().context.lastError ?? node.pgState()}`,
    );
  }
  const sysid = node.sampler.sample?.systemIdentifier ?? node.dataDir?.systemIdentifier ?? '';
  await dcs.initialize(sysid, false);
  if (!configStored) await dcs.setConfig(bootstrapDcs, 'absent');
  await node.lock.force('initialized a new standby cluster');
  node.sendRole({ type: 'STANDBY_LEADER' });
}
