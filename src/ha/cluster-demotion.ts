import { errorText } from '../common/error-text';
import { formatLsn } from '../common/lsn';
import { PostgresQuery, UpstreamNode } from '../postgresql/postgres.port';
import { withdrawPrimaryChecks } from './load-balancer-drain';
import { NodeActors } from './node-actors';
import { demoteStopDeadlineMs } from './postgres-deadlines';
import { startAsReplica } from './postgres-procedures';
import { pgCtlTimeoutOf } from './postgres-settings';

/**
 * How long the fast stop of an archive-only demotion may take while the archiver sends its backlog. The
 * reference waits without end; the lock stays held meanwhile, so no other member races, and past this the
 * stop escalates as any other (the shutdown checkpoint is then lost, and the log says so).
 */
export const ARCHIVE_DEMOTION_STOP_MS = 5 * 60_000;

/**
 * The reference's `demote-cluster` into an archive-only standby cluster (`standby_cluster` with a
 * restore_command and no host): a fast stop (no checkpoint asked first), keeping the leader key; when the
 * server archives its WAL (`archive_mode` on or always, `archive_command` set), the WAL file that holds the
 * shutdown checkpoint is archived too, so that the other cluster, restoring from the same archive, reaches
 * that checkpoint and its promotion branches after it (this cluster then follows it without pg_rewind).
 * The leader's optime becomes the shutdown checkpoint; PostgreSQL starts again in archive recovery
 * (restore_command, no primary_conninfo) and this node is the standby leader. A failed archive is logged
 * and recorded, and the demotion goes on (as the reference): the server restarts in recovery all the same.
 */
export async function demoteToArchive(node: NodeActors, remote: UpstreamNode): Promise<void> {
  const { pg, dcs, query, logger } = node.deps;
  logger.info('Demoting self (demote-cluster)');
  const archiveCommand = await archivingCommand(query).catch((error) => {
    logger.warning(
      `could not read archive_mode and archive_command before the demotion: ${errorText(error)}; the shutdown checkpoint will not be archived`,
    );
    return null;
  });
  node.events.recordCluster(
    'cluster.demoting',
    'demote-cluster: turning into an archive-only standby cluster, keeping the leader key',
    {
      remote: remote.name,
      archivesShutdownCheckpoint: archiveCommand !== null,
    },
  );
  withdrawPrimaryChecks(node, 'demote-cluster: stops taking writes now');
  const stopMs = archiveCommand
    ? Math.max(ARCHIVE_DEMOTION_STOP_MS, pgCtlTimeoutOf(node))
    : demoteStopDeadlineMs(node.dynamic);
  node.postgres.send({ type: 'STOP', mode: 'fast', timeoutMs: stopMs });
  await node.waitForPostgres((state) => !['running', 'stopping'].includes(state));

  const dataDir = await pg.inspectDataDir();
  node.remember({ type: 'DATA_DIR_INSPECTED', dataDir });
  if (dataDir.clusterState !== 'shut down' || dataDir.checkpointLsn === undefined) {
    logger.warning(
      `the demotion's stop was not clean (pg_control says ${dataDir.clusterState ?? 'nothing'}): no shutdown checkpoint to archive or publish`,
    );
  } else {
    if (!archiveCommand) logger.info('Not archiving latest checkpoint WAL file. Archiving is not configured.');
    else await archiveShutdownCheckpoint(node, archiveCommand, dataDir.redoWalFile);
    // As the reference's update_leader after demote-cluster: the optime is where this cluster's WAL ends.
    await dcs
      .setStatus({ optime: dataDir.checkpointLsn, ...(node.config.site ? { current_site: node.config.site } : {}) })
      .catch((error) =>
        logger.warning(`could not publish the shutdown checkpoint as the leader's optime: ${errorText(error)}`),
      );
    logger.info(
      `published the shutdown checkpoint at ${formatLsn(dataDir.checkpointLsn)} on timeline ${dataDir.timeline ?? '?'} as the standby leader's optime`,
    );
  }

  await startAsReplica(node, remote);
  // A failed task: the next cycle starts it again (recover.ts), still holding the lock.
  if (node.pgState() !== 'running')
    throw new Error(
      `PostgreSQL did not start in archive recovery after demote-cluster: ${node.postgres.getSnapshot().context.lastError ?? node.pgState()}`,
    );
  node.sendRole({ type: 'STANDBY_LEADER' });
  node.events.recordCluster(
    'cluster.demoted',
    'demote-cluster: running as the standby leader, restoring WAL from the archive',
    { remote: remote.name },
  );
}

/** Runs archive_command for the shutdown checkpoint's WAL file, within pg_ctl_timeout; a failure is logged and recorded. */
async function archiveShutdownCheckpoint(
  node: NodeActors,
  archiveCommand: string,
  walFile: string | undefined,
): Promise<void> {
  const { pg, logger } = node.deps;
  if (!walFile) {
    logger.error("Cannot extract latest checkpoint's WAL file name");
    node.events.recordCluster(
      'cluster.shutdown_checkpoint_not_archived',
      'pg_controldata named no REDO WAL file: the shutdown checkpoint was not archived',
      {},
    );
    return;
  }
  try {
    await pg.archiveWalFile(archiveCommand, walFile, pgCtlTimeoutOf(node));
    logger.info(`archived WAL file ${walFile} with the shutdown checkpoint`);
    node.events.recordCluster(
      'cluster.shutdown_checkpoint_archived',
      `archived WAL file ${walFile} with the shutdown checkpoint`,
      { walFile },
    );
  } catch (error) {
    // As the reference: the demotion goes on; promoting the other cluster may then need pg_rewind here.
    logger.error(`Failed to archive WAL file with the shutdown checkpoint (${walFile}): ${errorText(error)}`);
    node.events.recordCluster(
      'cluster.shutdown_checkpoint_not_archived',
      `archive_command failed for ${walFile}: giving up on archiving the shutdown checkpoint`,
      {
        walFile,
        error: errorText(error),
      },
    );
  }
}

/** `archive_command` when the server archives its WAL (`archive_mode` on or always), else null (the reference's get_archive_command). */
async function archivingCommand(query: PostgresQuery): Promise<string | null> {
  const [row] = await query.query<{ mode: string; command: string }>(
    "SELECT pg_catalog.current_setting('archive_mode') AS mode, pg_catalog.current_setting('archive_command') AS command",
  );
  return row && ['on', 'always'].includes(row.mode) && row.command ? row.command : null;
}
