"""The fence's event loop: one selector, timers, and signals delivered through a wakeup pipe.

The fence is a single thread. Signal handlers only note the signal; the loop runs the real handler
between events, so no handler ever interrupts the fence halfway through a change of its own state.
"""
from __future__ import annotations

import heapq
import os
import selectors
import signal
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import FrameType
    from typing import Any

# epoll refuses longer timeouts; a far timer is simply looked at again.
MAX_WAIT_S = 3600.0


class Timer:
    __slots__ = ('when', 'callback', 'cancelled')

    def __init__(self, when: float, callback: Callable[[], object]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Loop:
    def __init__(self, log: Callable[[str], None]) -> None:
        self.log = log
        self.selector = selectors.DefaultSelector()
        self._timers: list[tuple[float, int, Timer]] = []
        self._sequence = 0
        self._signal_callbacks: dict[int, Callable[[], object]] = {}
        self._noted_signals: list[int] = []
        self._stopped = False
        self._wakeup_read, self._wakeup_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(self._wakeup_write)
        self.selector.register(self._wakeup_read, selectors.EVENT_READ, self._drain_wakeup)

    def call_later(self, delay_ms: float, callback: Callable[[], object]) -> Timer:
        timer = Timer(time.monotonic() + max(0.0, delay_ms) / 1000.0, callback)
        self._sequence += 1
        heapq.heappush(self._timers, (timer.when, self._sequence, timer))
        return timer

    def on_signal(self, signum: int, callback: Callable[[], object]) -> None:
        self._signal_callbacks[signum] = callback
        signal.signal(signum, self._note_signal)

    def stop(self) -> None:
        self._stopped = True

    def run(self) -> None:
        while not self._stopped:
            for key, mask in self.selector.select(self._next_timeout()):
                self._guarded(key.data, mask)
            self._run_noted_signals()
            self._run_due_timers()

    def _note_signal(self, signum: int, _frame: FrameType | None) -> None:
        self._noted_signals.append(signum)

    def _drain_wakeup(self, _mask: int) -> None:
        try:
            while os.read(self._wakeup_read, 256):
                pass
        except BlockingIOError:
            pass

    def _run_noted_signals(self) -> None:
        while self._noted_signals and not self._stopped:
            signum = self._noted_signals.pop(0)
            callback = self._signal_callbacks.get(signum)
            if callback:
                self._guarded(callback)

    def _next_timeout(self) -> float | None:
        while self._timers and self._timers[0][2].cancelled:
            heapq.heappop(self._timers)
        if self._noted_signals:
            return 0
        if not self._timers:
            return None
        return min(MAX_WAIT_S, max(0.0, self._timers[0][0] - time.monotonic()))

    def _run_due_timers(self) -> None:
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now and not self._stopped:
            timer = heapq.heappop(self._timers)[2]
            if not timer.cancelled:
                timer.cancelled = True
                self._guarded(timer.callback)

    def _guarded(self, callback: Callable[..., object], *args: Any) -> None:
        # A bug in one handler must not end the fence: an unfenced postmaster is worse than a logged error.
        try:
            callback(*args)
        except Exception as error:  # noqa: BLE001
            self.log('uncaught: %s: %s' % (type(error).__name__, error))
