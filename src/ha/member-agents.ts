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
  /** The agent this node saw before, or null the first time the member appears. */
  previous: string | null;
}

/** Which agent wrote a member key: Stator adds `stator_version`, Patroni writes only its `version`. */
export function agentOf(data: MemberData): string {
  if (typeof data.stator_version === 'string' && data.stator_version) return `stator ${data.stator_version}`;
  return data.version ? `patroni ${data.version}` : 'unknown';
}

/**
 * The agent behind each member key, so that a rolling migration (one node at a time from Patroni to
 * Stator, or back) leaves one event per member per change of agent: an auditor sees when each node
 * changed agent. A member that leaves and returns with the same agent is not recorded again.
 */
export class MemberAgents {
  private readonly agents = new Map<string, string>();

  /** The members of a fresh view whose agent is new to this node. */
  see(cluster: ClusterView): MemberAgentChange[] {
    const changes: MemberAgentChange[] = [];
    for (const { name, data } of cluster.members) {
      const agent = agentOf(data);
      const previous = this.agents.get(name) ?? null;
      if (previous === agent) continue;
      this.agents.delete(name);
      this.agents.set(name, agent);
      changes.push({ member: name, agent, version: data.version, previous });
    }
    for (const name of this.agents.keys()) {
      if (this.agents.size <= MAX_REMEMBERED) break;
      this.agents.delete(name);
    }
    return changes;
  }
}
