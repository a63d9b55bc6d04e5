import { sleep } from '../common/clock';
import { NodeActors } from './node-actors';
import { WATCHDOG_ACTIVATION_WAIT_MS } from './watchdog-guard';

/** Mode `required`: PostgreSQL is promoted only once the fence holds the watchdog (not while paused, as the reference). */
export function watchdogBeforePromotion(node: NodeActors): Promise<void> {
  if (node.dynamic.pause) return Promise.resolve();
  const { pg, clock } = node.deps;
  return node.watchdog.awaitActivation(
    () => pg.fenceState(),
    (ms) => sleep(clock, ms),
    WATCHDOG_ACTIVATION_WAIT_MS,
  );
}

/** Looks at the watchdog once per HA cycle (mode `required`): a node without one may not lead. */
export function checkWatchdog(node: NodeActors): void {
  const failure = node.watchdog.failure(node.dynamic.ttl, node.dynamic.loop_wait, node.deps.pg.fenceState());
  node.remember({ type: 'WATCHDOG_FAILURE_CHANGED', failure });
}
