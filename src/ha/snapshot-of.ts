import { ClusterView } from '../dcs/dcs.port';
import { HaSnapshot, LocalView } from './cluster-snapshot';
import { activeSubstate, NodeContext } from './node-context';
import { canCloneWithoutLeader } from './replica-methods';
import { RoleName } from './role.machine';
import { unresponsiveForMs } from './unresponsive';

/** What decide() sees of this node and the cluster at `now`: copied from the node's actors, pure data. */
export function snapshotOf(node: NodeContext, cluster: ClusterView | null, dcsError: string | null, now: number): HaSnapshot {
  const postgres = node.postgres.getSnapshot();
  const running = node.pgState() === 'running';
  const local: LocalView = {
    name: node.name,
    tags: node.tags,
    pgState: node.pgState(),
    busy: node.busy ?? activeSubstate(postgres.value),
    role: node.roleName() as RoleName,
    leadership: node.leadership.getSnapshot().value as 'leader' | 'follower',
    dataDir: node.dataDir ?? { state: 'missing', standbySignal: false },
    sample: node.sampler.sample,
    upstream: node.upstream,
    notStreamingSince: running ? node.sampler.notStreamingSince : 0,
    bootstrapping: node.bootstrapping,
    lastError: postgres.context.lastError,
    failedStarts: postgres.context.failedStarts,
    unresponsiveMs: unresponsiveForMs(node.pgState(), node.sampler.answeredAt, now),
    lastStartAt: postgres.context.lastStartAt,
    failedClones: postgres.context.failedClones,
    lastCloneAt: postgres.context.lastCloneAt,
    canCloneWithoutLeader: canCloneWithoutLeader(node.config.postgresql),
    lastTask: lastTaskOf(node),
    readPoolWithdrawnAt: node.readPoolWithdrawnAt,
    watchdogFailed: node.watchdogFailure,
    ...(node.config.site ? { site: node.config.site } : {}),
  };
  return {
    now,
    config: node.dynamic,
    cluster,
    dcsError,
    local,
    failsafeMembers: node.knownFailsafeMembers,
    failsafeLeader: node.failsafe.leaderAccepted(now, node.dynamic.ttl)?.name ?? null,
  };
}

function lastTaskOf(node: NodeContext): LocalView['lastTask'] {
  const { lastTask, lastError, lastEndedAt, failuresInRow } = node.task.getSnapshot().context;
  return lastTask === null ? null : { name: lastTask, error: lastError, endedAt: lastEndedAt, failuresInRow };
}
