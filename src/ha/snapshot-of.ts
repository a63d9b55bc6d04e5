import { TimerClock, wallTimeOf } from '../common/clock';
import { ClusterView } from '../dcs/dcs.port';
import { HaSnapshot, LocalView } from './cluster-snapshot';
import { activeSubstate, NodeActors } from './node-actors';
import { canCloneWithoutLeader } from './replica-methods';
import { RoleName } from './role.machine';
import { unresponsiveForMs } from './unresponsive';

/**
 * What decide() sees of this node and the cluster now: copied from the node's actors, pure data. The
 * actors keep their instants on the monotonic clock; decide() compares them with the wall clock's `now`
 * (as it compares scheduled times), so each is handed over as the wall time it corresponds to at this
 * moment: the time elapsed since it stays true whatever the wall clock did meanwhile.
 */
export function snapshotOf(
  node: NodeActors,
  cluster: ClusterView | null,
  dcsError: string | null,
  clock: TimerClock,
): HaSnapshot {
  const now = clock.now();
  const monotonicNow = clock.monotonic();
  const wall = (at: number) => wallTimeOf(clock, at);
  const wallOrNull = (at: number | null) => (at === null ? null : wall(at));
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
    notStreamingSince: running ? wall(node.sampler.notStreamingSince) : 0,
    bootstrapping: node.bootstrapping,
    lastError: postgres.context.lastError,
    failedStarts: postgres.context.failedStarts,
    unresponsiveMs: unresponsiveForMs(node.pgState(), node.sampler.answeredAt, monotonicNow),
    lastStartAt: wallOrNull(postgres.context.lastStartAt),
    failedClones: postgres.context.failedClones,
    lastCloneAt: wallOrNull(postgres.context.lastCloneAt),
    canCloneWithoutLeader: canCloneWithoutLeader(node.config.postgresql),
    lastTask: lastTaskOf(node, wallOrNull),
    readPoolWithdrawnAt: wallOrNull(node.readPoolWithdrawnAt),
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
    failsafeLeader: node.failsafe.leaderAccepted(monotonicNow, node.dynamic.ttl)?.name ?? null,
  };
}

function lastTaskOf(node: NodeActors, wall: (at: number | null) => number | null): LocalView['lastTask'] {
  const { lastTask, lastError, lastEndedAt, failuresInRow } = node.task.getSnapshot().context;
  return lastTask === null ? null : { name: lastTask, error: lastError, endedAt: wall(lastEndedAt), failuresInRow };
}
