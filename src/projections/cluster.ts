import { RecordedEvent } from '../common/recorded-event';
import { Projection } from './projection';

export interface MemberProjection {
  /** Top-level state of the postgres machine (`running`, `crashed`...). */
  state?: string;
  role?: string;
  leadership?: 'leader' | 'follower';
  timeline?: number;
  /** The last HA verdict of the node. */
  verdict?: string;
  /** The full state of each of the node's machines (`{postgres: 'running.idle', role: 'primary', ...}`): what /ui highlights. */
  machines?: Record<string, string>;
}

/** Who leads, who is what, on which timeline: the cluster as its event log tells it. */
export interface ClusterProjection {
  leader: string | null;
  timeline: number;
  paused: boolean;
  members: Record<string, MemberProjection>;
}

const topLevel = (state: string | null) => (state ?? '').split('.')[0];

const TRANSITION_SUFFIX = '.transition';

/** A node machine's transition (`node/<name>/<machine>`, `<machine>.transition`) moves that machine's full state. */
function withMachineState(cluster: ClusterProjection, event: RecordedEvent): ClusterProjection {
  if (!event.type.endsWith(TRANSITION_SUFFIX) || !event.stream.startsWith('node/') || event.to === null) return cluster;
  const machine = event.type.slice(0, -TRANSITION_SUFFIX.length);
  const member = cluster.members[event.node];
  if (member?.machines?.[machine] === event.to) return cluster;
  return {
    ...cluster,
    members: {
      ...cluster.members,
      [event.node]: { ...member, machines: { ...member?.machines, [machine]: event.to } },
    },
  };
}

export const clusterProjection: Projection<ClusterProjection> = {
  initial: () => ({ leader: null, timeline: 1, paused: false, members: {} }),
  evolve(before, event: RecordedEvent) {
    const cluster = withMachineState(before, event);
    const member = (changes: MemberProjection): ClusterProjection => ({
      ...cluster,
      members: { ...cluster.members, [event.node]: { ...cluster.members[event.node], ...changes } },
    });
    switch (event.type) {
      case 'postgres.transition':
        return member({ state: topLevel(event.to) });
      case 'role.transition':
        return member({ role: event.to ?? undefined });
      case 'leadership.transition': {
        const leadership = event.to === 'leader' ? 'leader' : 'follower';
        const next = member({ leadership });
        if (leadership === 'leader') return { ...next, leader: event.node };
        return cluster.leader === event.node ? { ...next, leader: null } : next;
      }
      case 'ha.verdict':
        return member({ verdict: String(event.data?.verdict ?? '') });
      case 'leader.promoted': {
        const timeline = Number(event.data?.timeline ?? 0) || undefined;
        const next = member({ timeline });
        return timeline ? { ...next, timeline: Math.max(next.timeline, timeline) } : next;
      }
      case 'timeline.created':
        return { ...cluster, timeline: Math.max(cluster.timeline, Number(event.data?.timeline ?? 0) + 1) };
      case 'cluster.paused':
        return { ...cluster, paused: true };
      case 'cluster.resumed':
        return { ...cluster, paused: false };
      default:
        return cluster;
    }
  },
};
