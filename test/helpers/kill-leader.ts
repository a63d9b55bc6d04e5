import { LocalCluster, LocalNode } from '../../scripts/lib/local-cluster';
import { isRunningProcess } from '../../src/common/process-tree';
import { waitFor } from './wait-for';

/**
 * How a leader is lost: its agent and postmaster killed while its fence lives on (the fence ends the leader term,
 * as after a crash of the agent that takes PostgreSQL with it), or a power cut of every process of the node.
 */
export type LeaderLoss = 'agent-and-postmaster' | 'power-cut';

/** kill -9 of `node`'s agent, then at once of its postmaster (its fence lives on); returns when both are gone. */
export async function killAgentAndPostmaster(node: LocalNode): Promise<void> {
  const postmaster = node.postmasterPid();
  if (!node.pid || postmaster === null) throw new Error(`${node.name}: no agent or no postmaster to kill`);
  const agentGone = node.killAgent(); // signals the agent at once, resolves when it has exited
  process.kill(postmaster, 'SIGKILL');
  await agentGone;
  await waitFor(() => !isRunningProcess(postmaster), {
    timeoutMs: 5000,
    description: `${node.name}'s postmaster gone`,
  });
}

/**
 * Loses `leader` (by default its agent and postmaster killed) and waits up to `timeoutMs` for another member to hold
 * the leader key. `killedAt` is the instant before the first signal, for the failover's timings.
 */
export async function killLeaderAndWait(
  cluster: LocalCluster,
  leader: LocalNode,
  { timeoutMs, loss = 'agent-and-postmaster' }: { timeoutMs: number; loss?: LeaderLoss },
): Promise<{ newLeader: LocalNode; killedAt: number }> {
  const killedAt = Date.now();
  if (loss === 'power-cut') await leader.powerCut();
  else await killAgentAndPostmaster(leader);
  return { newLeader: await cluster.waitForLeader(timeoutMs, [leader.name]), killedAt };
}
