import { ClusterView, MemberData } from '../dcs/dcs.port';

/** More names than any cluster has: a flood of short-lived member keys cannot grow the map without bound. */
const MAX_REMEMBERED = 1000;

/** A member whose key was written by a different agent (or agent version) than this node last saw. */
export interface MemberAgentChange {
  member: string;
  /** `stator 0.1.0`, `patroni 3.0.2`, or `unknown` for a key without a version. */
  agent: string;
  /** What the key's `version` tells Patroni peers. */
  version: string;
  /** What a Stator agent runs on (`node 24.21.0`), or null when the key does not say. */
  runtime: string | null;
  /** The agent this node saw before, or null the first time the member appears. */
  previous: string | null;
  /** The runtime this node saw before (null: none said, or first seen). */
  previousRuntime: string | null;
}

/** Which agent wrote a member key: Stator adds `stator_version`, Patroni writes only its `version`. */
export function agentOf(data: MemberData): string {
  if (typeof data.stator_version === 'string' && data.stator_version) return `stator ${data.stator_version}`;
  return data.version ? `patroni ${data.version}` : 'unknown';
}

/** What the agent that wrote a member key runs on: Stator's `stator_runtime`, null for Patroni and older Stator keys. */
export function runtimeOf(data: MemberData): string | null {
  return typeof data.stator_runtime === 'string' && data.stator_runtime ? data.stator_runtime : null;
}

/** `stator 0.1.0 on node 24.21.0`, as the event's message says it. */
export function describeAgent(change: Pick<MemberAgentChange, 'agent' | 'runtime'>): string {
  return change.runtime ? `${change.agent} on ${change.runtime}` : change.agent;
}

/**
 * The agent behind each member key, so that a rolling migration (one node at a time from Patroni to
 * Stator, or back) or a rolling upgrade (another release or Node line) leaves one event per member per
 * change of agent or runtime: an auditor sees when each node changed. A member that leaves and returns
 * with the same agent on the same runtime is not recorded again.
 */
export class MemberAgents {
  private readonly agents = new Map<string, { agent: string; runtime: string | null }>();

  /** The members of a fresh view whose agent, or its runtime, is new to this node. */
  see(cluster: ClusterView): MemberAgentChange[] {
    const changes: MemberAgentChange[] = [];
    for (const { name, data } of cluster.members) {
      const agent = agentOf(data);
      const runtime = runtimeOf(data);
      const previous = this.agents.get(name) ?? null;
      if (previous?.agent === agent && previous.runtime === runtime) continue;
      this.agents.delete(name);
      this.agents.set(name, { agent, runtime });
      changes.push({
        member: name,
        agent,
        version: data.version,
        runtime,
        previous: previous?.agent ?? null,
        previousRuntime: previous?.runtime ?? null,
      });
    }
    for (const name of this.agents.keys()) {
      if (this.agents.size <= MAX_REMEMBERED) break;
      this.agents.delete(name);
    }
    return changes;
  }
}
