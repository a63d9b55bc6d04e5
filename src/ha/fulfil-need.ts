import { wallTimeOf } from '../common/clock';
import { HaSnapshot, PeerReading } from './cluster-snapshot';
import { Need } from './decide';
import { failsafeRound } from './failsafe/failsafe-rounds';
import { probeTargets, weighedReadings } from './failsafe/probe-targets';
import type { NodeActors } from './node-actors';
import { trackReadPool } from './load-balancer-drain';

/** Performs the one I/O step decide() asked for and returns the snapshot with its outcome. */
export async function fulfilNeed(node: NodeActors, need: Need, snapshot: HaSnapshot): Promise<HaSnapshot> {
  switch (need) {
    case 'refreshLock':
      return {
        ...snapshot,
        lockResult: await node.lock.refresh(node.dynamic.failsafe_mode && node.sampler.sample?.inRecovery === false),
      };
    case 'acquireLock': {
      const lockResult = await node.lock.acquire();
      // A new term decides synchronous_standby_names afresh; until then the value in force stays.
      if (lockResult === 'acquired') node.sync.forget();
      // The replica checks answer 503 from now on: the promotion's drain counts from here.
      trackReadPool(node, node.deps.clock.now());
      const readPoolWithdrawnAt =
        node.readPoolWithdrawnAt === null ? null : wallTimeOf(node.deps.clock, node.readPoolWithdrawnAt);
      return { ...snapshot, lockResult, local: { ...snapshot.local, readPoolWithdrawnAt } };
    }
    case 'raceInitialize': {
      const won = await node.deps.dcs.initialize('', true).catch(() => false);
      return { ...snapshot, initializeResult: won ? 'won' : 'lost' };
    }
    case 'failsafeRound':
      return { ...snapshot, failsafeResult: await failsafeRound(node, snapshot.failsafeMembers ?? {}) };
    case 'probePeers': {
      const targets = probeTargets(snapshot.cluster, node.name, snapshot.config.failsafe_mode);
      const readings: PeerReading[] = await Promise.all(targets.map((t) => node.probePeer(t.name, t.apiUrl)));
      return { ...snapshot, peers: weighedReadings(targets, readings) };
    }
  }
}
