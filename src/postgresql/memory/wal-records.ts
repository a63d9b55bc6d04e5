import { PostgresSettings } from '../postgres.port';
import {
  CHECKPOINT_RECORD_BYTES,
  END_OF_RECOVERY_RECORD_BYTES,
  MemoryCluster,
  MemoryPostmaster,
  renderParameters,
  RESTART_PARAMETERS,
} from './memory-state';
import { canStream, PROMOTION_REASON } from './wal-history';

/*
 * What a simulated server's WAL and parameters go through: checkpoints, restartpoints, the end of recovery, a WAL
 * receiver's step and a reload. Plain changes of the data directory's state (MemoryCluster) and the postmaster's;
 * MemoryPostgresServer calls them and settles the network after.
 */

/** A restartpoint at the newest checkpoint record replayed. */
export function restartpoint(cluster: MemoryCluster): void {
  const replayed = cluster.checkpointRecords.filter((record) => record.lsn < cluster.replayLsn).at(-1);
  if (replayed && replayed.lsn > cluster.checkpoint.lsn) cluster.checkpoint = replayed;
}

/** CHECKPOINT on a primary: a record in the WAL, which pg_control then points at. */
export function writeCheckpoint(cluster: MemoryCluster): void {
  const record = { lsn: cluster.walEnd, timeline: cluster.timeline };
  cluster.checkpointRecords.push(record);
  cluster.checkpoint = record;
  cluster.walEnd += CHECKPOINT_RECORD_BYTES;
  cluster.replayLsn = cluster.walEnd;
}

/** End of recovery after `pg_ctl promote`: replays what was received, then writes on timeline + 1. */
export function endRecovery(cluster: MemoryCluster, postmaster: MemoryPostmaster): void {
  cluster.replayLsn = cluster.walEnd;
  cluster.replayedCommitAt = cluster.commitAt;
  cluster.history = [...cluster.history, { timeline: cluster.timeline, lsn: cluster.walEnd, reason: PROMOTION_REASON }];
  cluster.timeline += 1;
  cluster.walEnd += END_OF_RECOVERY_RECORD_BYTES;
  cluster.replayLsn = cluster.walEnd;
  cluster.standbySignal = false;
  cluster.clusterState = 'in production';
  Object.assign(postmaster, {
    inRecovery: false,
    upstream: null,
    slotName: null,
    streaming: false,
    latestEndLsn: null,
    replayPaused: false,
  });
}

/**
 * One step of a replica's WAL receiver and startup process, against `source` (its upstream's data directory when it
 * can connect, else null); true when something moved.
 */
export function receiveAndReplay(
  cluster: MemoryCluster,
  postmaster: MemoryPostmaster,
  source: MemoryCluster | null,
): boolean {
  const before = JSON.stringify([
    cluster.timeline,
    cluster.walEnd,
    cluster.replayLsn,
    cluster.checkpoint,
    postmaster.streaming,
  ]);
  postmaster.streaming =
    !!source &&
    source.systemIdentifier === cluster.systemIdentifier &&
    (!postmaster.slotName || source.slots.has(postmaster.slotName)) &&
    canStream(cluster, source);
  if (postmaster.streaming && source) {
    cluster.timeline = source.timeline;
    cluster.history = [...source.history];
    cluster.walEnd = source.walEnd;
    cluster.commitAt = source.commitAt;
    cluster.checkpointRecords = source.checkpointRecords.filter((record) => record.lsn < cluster.walEnd);
    postmaster.received = true;
    postmaster.latestEndLsn = source.walEnd;
  } else {
    postmaster.latestEndLsn = null;
  }
  if (!postmaster.replayPaused) {
    cluster.replayLsn = cluster.walEnd;
    cluster.replayedCommitAt = cluster.commitAt;
    restartpoint(cluster);
  }
  return (
    before !==
    JSON.stringify([cluster.timeline, cluster.walEnd, cluster.replayLsn, cluster.checkpoint, postmaster.streaming])
  );
}

/** SIGHUP: reloadable parameters and the upstream apply now; the others wait for a restart. */
export function reloadSettings(postmaster: MemoryPostmaster, settings: PostgresSettings): void {
  const written = renderParameters(settings.parameters);
  // A reloadable parameter no longer in the file goes back to its default.
  for (const name of Object.keys(postmaster.parameters))
    if (!(name in written) && !RESTART_PARAMETERS.has(name)) delete postmaster.parameters[name];
  for (const [name, value] of Object.entries(written)) {
    const running = postmaster.parameters[name];
    if (!RESTART_PARAMETERS.has(name)) postmaster.parameters[name] = value;
    else if (running !== undefined && running !== value)
      postmaster.pendingRestart[name] = { old_value: running, new_value: value };
    else delete postmaster.pendingRestart[name];
  }
  if (postmaster.inRecovery && settings.role === 'replica') {
    postmaster.upstream = settings.upstream ?? null;
    postmaster.slotName = settings.slotName ?? null;
  }
}
