import { MemberData } from '../dcs/dcs.port';
import { memberData } from './member-data';
import { NodeActors } from './node-actors';

/** What a primary stopped cleanly publishes while its server is down: where its WAL ends. */
export interface ShutdownFacts {
  clusterState: string | undefined;
  checkpointLsn: number | undefined;
  timeline: number | undefined;
  serverRunning: boolean;
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
  if (facts.serverRunning || facts.clusterState !== 'shut down' || facts.checkpointLsn === undefined) return null;
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
      serverRunning: node.pgState() === 'running',
      leaving: node.leaving,
      sinceStartMs: node.deps.clock.monotonic() - node.agentStartedAt,
      ttlMs: node.dynamic.ttl * 1000,
    }),
  });
}
