import { sleep } from '../common/clock';
import { NodeActors } from './node-actors';
import { readPoolWithdrawal } from './read-pool';

/**
 * The waits that let a load balancer move before a role changes. Health checks answer from memory
 * at once; a load balancer sees a change only at its next check, so the role change waits a drain
 * (`load_balancer_drain_ms`, longer than the check interval) after the checks changed. Each
 * moment is an event on `node/<name>/load-balancer`.
 */

/**
 * A replica that took the lock while in the read pool (a failover) answers 503 on the replica checks
 * and waits before promoting. Returns false when the lock went meanwhile: then it must not promote.
 */
export async function drainBeforePromotion(node: NodeActors, drainMs: number): Promise<boolean> {
  node.events.recordLoadBalancer(
    'load_balancer.drain_started',
    'before promotion: the read pool drops this node first',
    { drain_ms: drainMs, before: 'promotion' },
  );
  await sleep(node.deps.clock, drainMs);
  const held = node.lock.held;
  node.events.recordLoadBalancer(
    'load_balancer.drain_ended',
    held ? 'promoting now' : 'lost the leader lock while draining: not promoting',
    {
      drain_ms: drainMs,
      before: 'promotion',
    },
  );
  return held;
}

/**
 * A leader asked to switch over keeps serving writes for the drain while the candidate answers 503 on
 * the replica checks, so the candidate is out of the read pool before it can become primary.
 */
export async function drainBeforeDemotion(node: NodeActors): Promise<void> {
  const drainMs = node.dynamic.load_balancer_drain_ms;
  if (drainMs <= 0) return;
  node.events.recordLoadBalancer(
    'load_balancer.drain_started',
    'before demotion: the read pool drops the switchover candidate first',
    { drain_ms: drainMs, before: 'demotion' },
  );
  await sleep(node.deps.clock, drainMs);
  node.events.recordLoadBalancer('load_balancer.drain_ended', 'demoting now', {
    drain_ms: drainMs,
    before: 'demotion',
  });
}

/** A primary about to stop taking writes: its role says `demoted`, so /primary and /read-write answer 503 from now. */
export function withdrawPrimaryChecks(node: NodeActors, cause: string): void {
  const wasPrimary = ['primary', 'promoted'].includes(node.roleName());
  node.sendRole({ type: 'DEMOTED' });
  if (wasPrimary) node.events.recordLoadBalancer('load_balancer.primary_checks_withdrawn', cause);
}

/**
 * Notes when this running replica leaves the read pool because it is about to be primary (it took
 * the lock, or it is a due switchover's candidate), as the health checks answer from the same
 * facts; each change is an event. The promotion waits the drain from this moment (read-pool.ts).
 */
export function trackReadPool(node: NodeActors, now: number): void {
  const inPool =
    node.pgState() === 'running' && node.sampler.sample?.inRecovery === true && node.tags.noloadbalance !== true;
  const leadership = node.leadership.getSnapshot().value as 'leader' | 'follower';
  const reason = inPool ? readPoolWithdrawal(leadership, node.cluster, node.name, now) : null;
  if (reason !== null && node.readPoolWithdrawnAt === null) {
    node.remember({ type: 'READ_POOL_WITHDRAWN', at: node.deps.clock.monotonic() });
    node.events.recordLoadBalancer('load_balancer.replica_checks_withdrawn', reason, {
      drain_ms: node.dynamic.load_balancer_drain_ms,
    });
  } else if (reason === null && node.readPoolWithdrawnAt !== null) {
    node.remember({ type: 'READ_POOL_RESTORED' });
    if (inPool)
      node.events.recordLoadBalancer('load_balancer.replica_checks_restored', 'no longer about to be primary');
  }
}
