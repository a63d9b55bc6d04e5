import { appendFileSync } from 'node:fs';
import { isRunningProcess } from '../../common/process-tree';
import { FenceJournalEntry, FenceTerm } from './fence-protocol';

/** How long the fence keeps trying to revoke the lease (etcd failing over between members included). */
const REVOKE_BUDGET_MS = 3000;
/** After a postmaster exit the fence did not cause, how long it watches for its agent's death (both killed at once). */
const AGENT_SETTLE_MS = 300;

/**
 * The fence's half of fence-assisted failover: it ends a leader's term when no agent can.
 *
 * While the agent holds a term (it armed the fence with one), losing every agent connection starts a
 * grace period (a supervisor restarting the agent is not a failover); if no agent connects before it
 * ends, PostgreSQL is stopped. Once the postmaster is confirmed gone (the fence is its parent), and only
 * then, the lease is revoked, so the replicas' watch fires at once instead of waiting for the lease to
 * expire. The same happens after the dead man's switch fired (a frozen agent), and after a postmaster
 * death while the agent is gone too. Every step goes to the journal, which the next agent records.
 */
export class LeaderTermGuard {
  private term: FenceTerm | null = null;
  private graceTimer: NodeJS.Timeout | null = null;
  private agentLost = false;
  /** The grace ran out: the stop that follows is the fence's own decision. */
  private endingTerm = false;

  constructor(
    private readonly journalPath: string,
    private readonly log: (message: string) => void,
    /** Stops the postmaster (with escalation) on the fence's own account. */
    private readonly stopPostmaster: (reason: string) => void,
  ) {}

  /** The agent's latest arm: a term to guard, or none (paused, or not the lock holder). */
  hold(term: FenceTerm | undefined): void {
    this.term = term ?? null;
    if (!this.term) this.cancelGrace();
  }

  get holding(): boolean {
    return this.term !== null;
  }

  agentConnected(): void {
    if (!this.agentLost || this.endingTerm) return;
    this.agentLost = false;
    this.cancelGrace();
    this.journal('agent_back', 'an agent connected again within the grace period: nothing was stopped');
  }

  /** The last agent connection closed. */
  agentsGone(): void {
    const term = this.term;
    if (!term || this.endingTerm || this.graceTimer) return;
    this.agentLost = true;
    this.journal('agent_lost', `agent ${term.agentPid} disconnected; PostgreSQL stops in ${term.graceMs} ms unless an agent connects`);
    this.graceTimer = setTimeout(() => {
      this.graceTimer = null;
      this.endingTerm = true;
      this.journal('stopping_postgres', `no agent within ${term.graceMs} ms: stopping PostgreSQL to end the leader's term`);
      this.stopPostmaster('the leader\'s agent is gone');
    }, term.graceMs);
  }

  /**
   * Called once the postmaster has exited (and every process it left was killed). When the fence itself
   * ended the term (grace or deadline), the lease is revoked before agents are told. Otherwise agents are
   * told at once (a live one restarts PostgreSQL in place, keeping the term) and, after a crash, the lease
   * is revoked only if the agent turns out gone too: killed with the postmaster, possibly a moment after
   * it. A stop the agent asked for (a switchover, its own clean shutdown) is the agent's to finish.
   */
  async afterPostmasterExit(exit: { fenced: boolean; requested: boolean }, tellAgents: () => void): Promise<void> {
    this.cancelGrace();
    const term = this.term;
    if (!term) return tellAgents();
    const ownDecision = this.endingTerm || exit.fenced;
    if (!ownDecision) {
      tellAgents();
      if (exit.requested || !(await agentGone(term.agentPid))) return;
    }
    const why = this.endingTerm ? 'after the grace period' : exit.fenced ? 'at the fence deadline' : 'on its own, with its agent gone';
    this.journal('postgres_stopped', `the postmaster is gone (${why}); ending the term`);
    // Loaded only now: the HTTP and TLS modules would cost every fence about 1.5 MiB for a moment that rarely comes.
    const { revokeLease } = await import('./lease-revoker');
    const outcome = await revokeLease(term.release, REVOKE_BUDGET_MS);
    this.journal(outcome.revoked ? 'lease_revoked' : 'lease_revoke_failed', outcome.detail);
    tellAgents();
  }

  private cancelGrace(): void {
    if (this.graceTimer) clearTimeout(this.graceTimer);
    this.graceTimer = null;
  }

  private journal(step: FenceJournalEntry['step'], detail: string): void {
    this.log(`${step}: ${detail}`);
    const entry: FenceJournalEntry = { at: Date.now(), step, detail };
    try {
      appendFileSync(this.journalPath, JSON.stringify(entry) + '\n');
    } catch (error) {
      this.log(`cannot write ${this.journalPath}: ${String(error)}`);
    }
  }
}

/** True once the agent process is gone (a zombie counts), waiting a moment for one killed together with its postmaster. */
async function agentGone(agentPid: number): Promise<boolean> {
  const settleUntil = Date.now() + AGENT_SETTLE_MS;
  while (isRunningProcess(agentPid)) {
    if (Date.now() >= settleUntil) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}
