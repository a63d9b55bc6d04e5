import { Subscription } from 'rxjs';
import { topLevelState } from '../events/transition-recorder';
import { PostgresStateName } from '../postgresql/postgres-states';
import { NodeActors } from './node-actors';

/**
 * What the node's actors do when PostgreSQL changes under them: a postmaster's exit is logged and told to the
 * postgres machine; each change of its top-level state starts or stops the sampler's readings and wakes the
 * HA cycle (`wake`). The exits' subscription is the caller's to end; the states' ends with the postgres actor
 * (a stop of PostgreSQL at shutdown still reaches the sampler).
 */
export function followPostgres(node: NodeActors, wake: () => void): Subscription {
  const { pg, logger } = node.deps;
  const exits = pg.exits().subscribe((exit) => {
    logger.warning(
      `postmaster ${exit.pid} exited (${exit.signal ?? `code ${exit.code}`})${exit.fenced ? ': stopped by the fence' : ''}` +
        (exit.lastLog ? `; its log ends: ${exit.lastLog}` : ''),
    );
    node.postgres.send({
      type: 'POSTMASTER_EXITED',
      pid: exit.pid,
      code: exit.code,
      signal: exit.signal,
      fenced: exit.fenced,
      lastLog: exit.lastLog,
    });
  });
  let previousState = node.pgState();
  node.postgres.subscribe((snapshot) => {
    const state = topLevelState(snapshot.value) as PostgresStateName;
    if (state === previousState) return;
    previousState = state;
    if (state === 'running') {
      node.sampler.serverStarted();
      void node.sampler.take();
    } else node.sampler.serverGone();
    wake();
  });
  return exits;
}
