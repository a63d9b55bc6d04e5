import type { LocalCluster, LocalNode } from '../local-cluster';
import type { NetnsLab } from '../netns-lab';
import type { Fault, FaultBed } from './fault';

/**
 * Latency and packet loss on one node's cluster link (to etcd and its peers; its clients' link is left alone), in the
 * network-namespace bed (netns-lab.ts): the leader's, or a replica's. Each is held for ttl + 10 s, then undone: a
 * leader that cannot renew its key loses it within the ttl, and the 10 s after cover a loop_wait, a retry_timeout and
 * a replica's promotion, so whatever the fault makes the cluster do happens while it still holds. docs/chaos-and-safety.md
 * states each one's expected outcome.
 */
const HOLD_PAST_TTL_S = 10;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Target = 'leader' | 'replica';

/**
 * The replica a fault hits: the synchronous standby when the leader's `/cluster` names one (the replica whose link a
 * synchronous commit waits on), otherwise the first node that is not the leader.
 */
export async function replicaToFault(cluster: LocalCluster, leader: LocalNode): Promise<LocalNode> {
  try {
    const response = await fetch(`${leader.apiUrl}/cluster`, { signal: AbortSignal.timeout(2000) });
    const { members } = (await response.json()) as { members: { name: string; role: string }[] };
    const standby = members.find((member) => ['sync_standby', 'quorum_standby'].includes(member.role));
    const node = cluster.nodes.find((n) => n.name === standby?.name && n !== leader);
    if (node) return node;
  } catch {
    // no answer: the first replica
  }
  return cluster.nodes.find((node) => node !== leader)!;
}

function labOf(bed: FaultBed): NetnsLab {
  if (!bed.lab) throw new Error('a network fault needs the network-namespace bed (--bed netns)');
  return bed.lab;
}

async function target(cluster: LocalCluster, leader: LocalNode, who: Target): Promise<LocalNode> {
  return who === 'leader' ? leader : replicaToFault(cluster, leader);
}

function delay(label: string, who: Target, ms: (bed: FaultBed) => number): Fault {
  return {
    name: `${label} one-way delay on ${who === 'leader' ? "the leader's" : "a replica's"} cluster link for ttl + ${HOLD_PAST_TTL_S} s`,
    needsNetns: true,
    async inject(cluster, leader, ttl, bed) {
      const lab = labOf(bed);
      const node = await target(cluster, leader, who);
      try {
        await lab.delayOnNode(node.index, ms(bed));
        await sleep((ttl + HOLD_PAST_TTL_S) * 1000);
      } finally {
        await lab.stopDelayingOnNode(node.index);
      }
    },
  };
}

function loss(percent: number, who: Target): Fault {
  return {
    name: `${percent} % packet loss on ${who === 'leader' ? "the leader's" : "a replica's"} cluster link for ttl + ${HOLD_PAST_TTL_S} s`,
    needsNetns: true,
    async inject(cluster, leader, ttl, bed) {
      const lab = labOf(bed);
      const node = await target(cluster, leader, who);
      lab.loseOnNode(node.index, percent);
      try {
        await sleep((ttl + HOLD_PAST_TTL_S) * 1000);
      } finally {
        lab.stopLosingOnNode(node.index);
      }
    },
  };
}

export const NETWORK_FAULTS: Fault[] = (['leader', 'replica'] as const).flatMap((who) => [
  delay('150 ms', who, () => 150),
  delay('1 s', who, () => 1000),
  delay('retry_timeout + 1 s', who, (bed) => (bed.retryTimeoutSeconds + 1) * 1000),
  loss(5, who),
  loss(30, who),
]);
