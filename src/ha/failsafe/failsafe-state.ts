import { FailsafeCall } from './failsafe-caller';

/**
 * DCS failsafe mode as one node sees it (reference `Failsafe`). A leader that cannot reach the DCS
 * stays primary only while every member listed in `/failsafe` accepts its call; each accepted round
 * keeps it for a ttl from the moment the round started. A member that accepted a leader's call does
 * not race for the lock for a ttl from then, so no member promotes while that leader may still run.
 */
export class FailsafeState {
  /** Leader side: when the last round every member accepted was started (epoch ms), 0 when none counts. */
  private roundStartedAt = 0;
  /** Leader side: the WAL position each member answered that round with (member name → byte position). */
  private answeredPositions: Record<string, number> = {};
  /** Member side: the last leader whose call this node accepted, and when. */
  private acceptedLeader: (FailsafeCall & { at: number }) | null = null;

  /**
   * `answers`: each member's answer; the WAL positions they carry move the leader's idle slots for members
   * that cascade from another member meanwhile (as the reference).
   */
  roundAccepted(startedAt: number, answers: ReadonlyArray<{ name: string; lsn?: number }> = []): void {
    this.roundStartedAt = startedAt;
    this.answeredPositions = Object.fromEntries(
      answers.flatMap((answer) => (answer.lsn !== undefined ? [[answer.name, answer.lsn]] : [])),
    );
  }

  /** The DCS answered again, or a round failed: the leader holds its term by the lock alone. */
  leaderEnded(): void {
    this.roundStartedAt = 0;
    this.answeredPositions = {};
  }

  /** Where the members said their WAL stands in the last accepted round (empty outside failsafe). */
  memberPositions(): Record<string, number> {
    return this.answeredPositions;
  }

  accept(call: FailsafeCall, now: number): void {
    this.acceptedLeader = { ...call, at: now };
  }

  /** The leader this node accepted within the last ttl, or null. */
  leaderAccepted(now: number, ttlSeconds: number): FailsafeCall | null {
    const leader = this.acceptedLeader;
    return leader && now - leader.at < ttlSeconds * 1000 ? leader : null;
  }

  /** `failsafe_mode_is_active`: this leader is primary by failsafe, or this member answered such a leader, within a ttl. */
  isActive(now: number, ttlSeconds: number): boolean {
    return now - this.roundStartedAt < ttlSeconds * 1000 || this.leaderAccepted(now, ttlSeconds) !== null;
  }
}
