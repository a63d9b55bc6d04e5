import { MemberData } from '../dcs/dcs.port';
import { memberData } from './member-data';
import { NodeActors } from './node-actors';

/** What a primary stopped cleanly publishes while its server is down: where its WAL ends. */
export interface ShutdownFacts {
  clusterState: string | undefined;
  checkpointLsn: number | undefined;
  timeline: number | undefined;
  /**
   * The server runs and the sampler has read it: its own WAL position replaces the checkpoint. One that runs but was
   * not read yet (the cycle that started it touches the key before the next cycle samples) still shows the checkpoint,
   * or the key would show no position at all and a member behind it could win the race in that moment.
   */
  serverRead: boolean;
  /** The agent is stopping. */
  leaving: boolean;
  /** ms since this agent started, and the ttl in ms. */
  sinceStartMs: number;
  ttlMs: number;
}

/**
 * A primary stopped cleanly (pg_control says `shut down`) holds the most WAL after a whole-cluster
 * stop, the shutdown checkpoint included. While its server is down its member key shows that
 * checkpoint: when its agent stops, and for the first ttl after it starts again. No member behind
 * it wins a race it cannot answer meanwhile (decide.ts), and the wait never outlasts a ttl.
 */
export function shutdownCheckpoint(facts: ShutdownFacts): { lsn: number; timeline?: number } | null {
  if (facts.serverRead || facts.clusterState !== 'shut down' || facts.checkpointLsn === undefined) return null;
  if (!facts.leaving && facts.sinceStartMs > facts.ttlMs) return null;
  return { lsn: facts.checkpointLsn, timeline: facts.timeline };
}

/** This node's member key as it publishes it now. */
export function memberKeyOf(node: NodeActors): MemberData {
  const { dataDir } = node;
  return memberData({
    config: node.config,
    version: node.deps.version,
    runtime: node.deps.runtime,
    pgState: node.pgState(),
    role: node.roleName(),
    sample: node.sampler.sample,
    tags: node.leavingSync ? { ...node.tags, nosync: true } : node.tags,
    checkpointAfterPromotePending: node.checkpointAfterPromotePending,
    scheduledRestart: node.scheduler.current,
    paused: node.dynamic.pause,
    shutdownCheckpoint: shutdownCheckpoint({
      clusterState: dataDir?.clusterState,
      checkpointLsn: dataDir?.checkpointLsn,
      timeline: dataDir?.timeline,
      serverRead: node.pgState() === 'running' && node.sampler.sample !== null,
      leaving: node.leaving,
      sinceStartMs: node.deps.clock.monotonic() - node.agentStartedAt,
      ttlMs: node.dynamic.ttl * 1000,
    }),
  });
}
