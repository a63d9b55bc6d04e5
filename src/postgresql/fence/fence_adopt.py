"""Adopting a postmaster that lost its fence (the fence was killed, alone or with its agent).

The fence is normally the postmaster's parent; a killed fence leaves the postmaster running on as an orphan, and
nothing would stop it at its lease's end. A new fence cannot become its parent, but a pidfd gives it the two things
being the parent gave: a signal aimed at that very process (never at a later one reusing its pid) and a wakeup when
it exits (its exit code is lost: only its parent could read it).
"""
from __future__ import annotations

import os
import selectors
import signal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from fence_loop import Loop


def open_postmaster(data_dir: str, pid: int) -> tuple[int, int]:
    """(pidfd, start time in epoch ms) of postmaster `pid` once checked to be the one `postmaster.pid` in `data_dir`
    names, serving that directory; ValueError or OSError otherwise (nothing is left open then)."""
    pidfd = os.pidfd_open(pid)
    try:
        with open(os.path.join(data_dir, 'postmaster.pid')) as pid_file:
            lines = pid_file.read().split('\n')
        if len(lines) < 3 or lines[0].strip() != str(pid):
            raise ValueError('postmaster.pid in %s does not name pid %d' % (data_dir, pid))
        if os.path.realpath(lines[1].strip()) != os.path.realpath(data_dir):
            raise ValueError('pid %d serves %s, not %s' % (pid, lines[1].strip(), data_dir))
        # Still alive through its pidfd: the process checked above is the one the pidfd holds, not a later one.
        signal.pidfd_send_signal(pidfd, 0)
        started_s = lines[2].strip()
        return pidfd, int(started_s) * 1000 if started_s.isdigit() else 0
    except BaseException:
        os.close(pidfd)
        raise


class AdoptedPostmaster:
    """A postmaster held through its pidfd: signalled through it, and `on_exit` called once when it exits."""

    def __init__(self, loop: Loop, data_dir: str, pid: int, on_exit: Callable[[], None]) -> None:
        """Raises OSError or ValueError (see open_postmaster) when `pid` cannot be adopted."""
        self.pid = pid
        self._loop = loop
        self._pidfd: int | None
        self._pidfd, self.started_at = open_postmaster(data_dir, pid)
        self._on_exit = on_exit
        loop.selector.register(self._pidfd, selectors.EVENT_READ, self._exited)

    def signal(self, signum: signal.Signals) -> None:
        if self._pidfd is not None:
            signal.pidfd_send_signal(self._pidfd, signum)

    def _exited(self, _mask: int) -> None:
        if self._pidfd is None:
            return
        self._loop.selector.unregister(self._pidfd)
        os.close(self._pidfd)
        self._pidfd = None
        self._on_exit()
