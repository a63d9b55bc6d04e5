import { errorText } from '../common/error-text';
import { PermanentSlot } from '../config/slots-config';
import { ClusterView } from '../dcs/dcs.port';
import { HaSnapshot, upstreamOf } from './cluster-snapshot';
import { NodeActors } from './node-actors';
import { restart } from './postgres-procedures';
import { failedTaskRetryAt } from './start-failure';

/** Runs a multi-step procedure in the background (the HA cycle's task runner). */
type TaskRunner = (name: string, work: () => Promise<void>) => void;

/**
 * A replica keeps a copy of every permanent logical slot, so that a logical-decoding consumer goes on
 * from the new leader after a failover (reference, PostgreSQL 11 to 15). PostgreSQL before 16 cannot
 * create a logical slot on a standby: the slot's state is copied from the leader's data directory,
 * and the replica restarts to load it. From then on each cycle advances the copy to the position the
 * leader publishes (where its consumer confirmed), so the new leader's slot resumes there: changes
 * after it may come again, as logical decoding promises, but none is lost.
 */
export async function keepLogicalSlotCopies(
  node: NodeActors,
  snapshot: HaSnapshot,
  cluster: ClusterView,
  slots: PermanentSlot[],
  runTask: TaskRunner,
): Promise<void> {
  const { query, pg, logger } = node.deps;
  const published = cluster.status?.value.slots ?? {};
  const here = await query.logicalSlotPositions(slots.map((slot) => slot.name));
  const leader = upstreamOf(cluster.members.find((member) => member.name === cluster.leader?.value));
  // Only a slot the leader has published exists there to copy.
  const missing = slots.filter((slot) => !(slot.name in here) && typeof published[slot.name] === 'number');
  // While the DCS is down (`cluster` is then the failsafe leader's view) copies are only advanced, as the reference does.
  if (missing.length > 0 && leader && snapshot.cluster) {
    // A copy that could not be made (the slot needs WAL this replica lacks) is tried again after a growing pause.
    if (
      failedTaskRetryAt(snapshot.local.lastTask, 'copy_logical_slots', snapshot.now, snapshot.config.loop_wait) !== null
    )
      return;
    runTask('copy_logical_slots', async () => {
      const oldestWal = await query.oldestWalPosition();
      for (const slot of missing) {
        await pg.copyLogicalSlot(leader, slot.name, oldestWal);
        node.events.recordCluster('slot.copied', `logical slot ${slot.name} copied from ${leader.name}`, {
          slot: slot.name,
          type: 'logical',
          source: leader.name,
        });
      }
      logger.info(
        `restarting to load the logical slots copied from ${leader.name}: ${missing.map((slot) => slot.name).join(', ')}`,
      );
      if ((await restart(node)) !== 'restarted') throw new Error('the restart to load the copied logical slots failed');
    });
    return;
  }
  const positions = Object.fromEntries(
    slots
      .filter((slot) => slot.name in here && typeof published[slot.name] === 'number')
      .map((slot) => [slot.name, published[slot.name]]),
  );
  await query
    .advanceLogicalSlots(slots, positions)
    .catch((error) => logger.warning(`advancing permanent logical slots failed: ${errorText(error)}`));
}
