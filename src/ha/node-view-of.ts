import { TimerClock, wallTimeOf } from '../common/clock';
import { replayableMemory } from './ha-memory.machine';
import type { NodeActors } from './node-actors';
import { NodeView } from './node-view';

/** What the API serves of a node, read from its actors (`lastCycleAt`: the last HA cycle, monotonic ms). */
export function nodeViewOf(node: NodeActors, clock: TimerClock, lastCycleAt: number): NodeView {
  return {
    name: node.name,
    pgState: node.pgState(),
    role: node.roleName(),
    leadership: node.leadership.getSnapshot().value as 'leader' | 'follower',
    lockValidUntil: wallTimeOf(clock, node.lock.lockValidUntil),
    sample: node.sampler.sample,
    // Kept on the monotonic clock; the API compares them with the wall clock.
    sampleAt: wallTimeOf(clock, node.sampler.sampleAt),
    pgAnsweredAt: wallTimeOf(clock, node.sampler.answeredAt),
    cluster: node.cluster,
    dcsLastSeen: wallTimeOf(clock, node.dcsLastSeen),
    config: node.dynamic,
    lastCycleAt: wallTimeOf(clock, lastCycleAt),
    verdict: node.events.verdict,
    dataDir: node.dataDir,
    tags: node.tags,
    activity: node.activity(),
    scheduledRestart: node.scheduler.current,
    failsafeActive: node.dynamic.failsafe_mode && node.failsafe.isActive(clock.monotonic(), node.dynamic.ttl),
    watchdogFailed: node.watchdogFailure !== null,
    memory: replayableMemory(node.memory.getSnapshot().context),
    ...(node.config.site ? { site: node.config.site } : {}),
  };
}
