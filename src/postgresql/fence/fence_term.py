"""The fence's half of fence-assisted failover: it ends a leader's term when no agent can.

While the agent holds a term (it armed the fence with one), losing every agent connection starts a grace
period (a supervisor restarting the agent is not a failover); if no agent connects before it ends,
PostgreSQL is stopped. Once the postmaster is confirmed gone (the fence is its parent), and only then, the
lease is revoked, so the replicas' watch fires at once instead of waiting for the lease to expire. The same
happens after the dead man's switch fired (a frozen agent), and after a postmaster death while the agent is
gone too. Every step goes to the journal, which the next agent records.
"""
from __future__ import annotations

import json
import time

from fence_process_tree import is_running
from fence_values import is_finite_number

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from fence_loop import Loop, Timer
    from fence_protocol import ExitEvent, FenceTerm, JournalEntry, JournalStep

# How long the fence keeps trying to revoke the lease (etcd failing over between members included).
REVOKE_BUDGET_MS = 3000
# After a postmaster exit the fence did not cause, how long it watches for its agent's death (both killed at once).
AGENT_SETTLE_S = 0.3


def parse_term(term: object) -> FenceTerm | None:
    """The term of an `arm` request, checked field by field; None when absent; ValueError when malformed."""
    if term is None:
        return None
    release = term.get('release') if isinstance(term, dict) else None
    if not (
        isinstance(term, dict)
        and isinstance(release, dict)
        and _is_number(term.get('agentPid'))
        and _is_number(term.get('graceMs'))
        and isinstance(release.get('endpoints'), list)
        and isinstance(release.get('leaseId'), str)
    ):
        raise ValueError('a term needs agentPid, graceMs, release.endpoints and release.leaseId')
    # The release goes on as the agent sent it: its optional tls and auth are read with .get() where used.
    return {'agentPid': term['agentPid'], 'graceMs': term['graceMs'], 'release': term['release']}


def _is_number(value: object) -> bool:
    return is_finite_number(value) and value >= 0


class LeaderTermGuard:
    def __init__(
        self, loop: Loop, journal_path: str, log: Callable[[str], None], stop_postmaster: Callable[[str], None]
    ) -> None:
        self._loop = loop
        self._journal_path = journal_path
        self._log = log
        # Stops the postmaster (with escalation) on the fence's own account.
        self._stop_postmaster = stop_postmaster
        self._term: FenceTerm | None = None
        self._grace_timer: Timer | None = None
        self._agent_lost = False
        # The grace ran out: the stop that follows is the fence's own decision.
        self._ending_term = False

    def hold(self, term: FenceTerm | None) -> None:
        """The agent's latest arm: a term to guard, or none (paused, or not the lock holder)."""
        self._term = term
        if term is None:
            self._cancel_grace()
        else:
            # Loaded now, on a leader's fence only, so that ending the term does not wait for an import.
            import fence_revoke  # noqa: F401

    def agent_connected(self) -> None:
        if not self._agent_lost or self._ending_term:
            return
        self._agent_lost = False
        self._cancel_grace()
        self.journal('agent_back', 'an agent connected again within the grace period: nothing was stopped')

    def agents_gone(self) -> None:
        """The last agent connection closed."""
        term = self._term
        if term is None or self._ending_term or self._grace_timer:
            return
        self._agent_lost = True
        grace_ms = term['graceMs']
        self.journal('agent_lost', 'agent %s disconnected; PostgreSQL stops in %s ms unless an agent connects'
                     % (term['agentPid'], _ms(grace_ms)))

        def grace_over() -> None:
            self._grace_timer = None
            self._ending_term = True
            self.journal('stopping_postgres',
                         "no agent within %s ms: stopping PostgreSQL to end the leader's term" % _ms(grace_ms))
            self._stop_postmaster("the leader's agent is gone")

        self._grace_timer = self._loop.call_later(grace_ms, grace_over)

    def after_postmaster_exit(self, exit_event: ExitEvent, tell_agents: Callable[[], None]) -> None:
        """Called once the postmaster has exited (and every process it left was killed).

        When the fence itself ended the term (grace or deadline), the lease is revoked before agents are
        told. Otherwise agents are told at once (a live one restarts PostgreSQL in place, keeping the term)
        and, after a crash, the lease is revoked only if the agent turns out gone too: killed with the
        postmaster, possibly a moment after it. A stop the agent asked for (a switchover, its own clean
        shutdown) is the agent's to finish. Blocks for at most the settle time and the revoke budget: the
        postmaster is gone, and ending the term is all the fence has left to do.
        """
        self._cancel_grace()
        term = self._term
        if term is None:
            tell_agents()
            return
        own_decision = self._ending_term or exit_event['fenced']
        if not own_decision:
            tell_agents()
            if exit_event['requested'] or not _agent_gone(int(term['agentPid'])):
                return
        why = ('after the grace period' if self._ending_term else 'at the fence deadline' if exit_event['fenced']
               else 'on its own, with its agent gone')
        self.journal('postgres_stopped', 'the postmaster is gone (%s); ending the term' % why)
        from fence_revoke import revoke_lease

        revoked, detail = revoke_lease(term['release'], REVOKE_BUDGET_MS)
        self.journal('lease_revoked' if revoked else 'lease_revoke_failed', detail)
        tell_agents()

    def _cancel_grace(self) -> None:
        if self._grace_timer:
            self._grace_timer.cancel()
        self._grace_timer = None

    def journal(self, step: JournalStep, detail: str) -> None:
        self._log('%s: %s' % (step, detail))
        entry: JournalEntry = {'at': int(time.time() * 1000), 'step': step, 'detail': detail}
        try:
            with open(self._journal_path, 'a') as journal:
                journal.write(json.dumps(entry, separators=(',', ':')) + '\n')
        except OSError as error:
            self._log('cannot write %s: %s' % (self._journal_path, error))


def _ms(value: float) -> float:
    return int(value) if float(value).is_integer() else value


def _agent_gone(agent_pid: int) -> bool:
    """True once the agent process is gone (a zombie counts).

    Waits a moment for one killed together with its postmaster.
    """
    settle_until = time.monotonic() + AGENT_SETTLE_S
    while is_running(agent_pid):
        if time.monotonic() >= settle_until:
            return False
        time.sleep(0.02)
    return True
