"""The watchdog when the term ends: left armed and held past its timeout when the fence's deadline passed (the
agent failed to keep its term), closed with the magic 'V' when the agent stopped PostgreSQL itself. The device is
a FIFO read as Patroni's acceptance harness reads it."""
from __future__ import annotations

import os
import time
import unittest
from unittest import mock

from fence_support import FenceRun, ScratchTestCase

import fence_watchdog
from fence_postmaster import now_ms


class WatchdogWhenTheTermEnds(ScratchTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.fifo = str(self.state_dir / 'watchdog.fifo')
        os.mkfifo(self.fifo)
        self.reader = os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK)
        self.seen = b''
        self.writer_closed = False

    def tearDown(self) -> None:
        os.close(self.reader)
        super().tearDown()

    def read_fifo(self) -> bytes:
        """Everything written so far; notes when the fence closed its end (EOF)."""
        while True:
            try:
                chunk = os.read(self.reader, 4096)
            except BlockingIOError:
                return self.seen
            if not chunk:
                self.writer_closed = True
                return self.seen
            self.seen += chunk

    def arm(self, run: FenceRun, deadline_in_ms: int) -> None:
        run.send({'op': 'arm', 'deadline': now_ms() + deadline_in_ms,
                  'watchdog': {'driver': 'testing', 'device': self.fifo, 'timeout': 1, 'required': False}})

    def test_a_deadline_that_passes_leaves_it_armed_and_open_past_its_timeout(self) -> None:
        run = FenceRun(self)
        try:
            with mock.patch.object(fence_watchdog, 'LEFT_ARMED_HOLD_MARGIN_S', 0.5):
                run.connect()
                self.arm(run, 300)
                run.run_until(lambda: self.read_fifo() == b'Ctimeout=1\n1', 'the watchdog is activated')
                pinged_at = time.monotonic()
                run.run_until(lambda: any(m['event'] == 'exit' for m in run.received()), 'the postmaster is fenced')
                self.assertEqual(run.exit_code_if_any(), None, 'the fence holds the device past the exit')
                run.run_to_exit()
                held_s = time.monotonic() - pinged_at
                self.read_fifo()
            self.assertEqual(self.seen, b'Ctimeout=1\n1', "never pet again, never 'V'")
            self.assertTrue(self.writer_closed)
            # Held past the device's timeout (1 s) after the last ping, by the margin (0.5 s; pinged_at is read up
            # to one loop turn after the ping).
            self.assertGreaterEqual(held_s, 1.4)
            events = [m for m in run.received() if m['event'] in ('watchdog', 'exit')]
            self.assertEqual(events[-2]['reason'], "left armed: the term ended on the fence's deadline")
            self.assertTrue(events[-2]['running'])
            self.assertEqual(events[-1]['event'], 'exit')
            self.assert_logged('closed without the magic close after its timeout elapsed')
        finally:
            run.close()

    def test_a_stop_the_agent_asked_for_closes_it_with_the_magic_close(self) -> None:
        run = FenceRun(self)
        try:
            run.connect()
            self.arm(run, 5000)
            run.run_until(lambda: self.read_fifo() == b'Ctimeout=1\n1', 'the watchdog is activated')
            run.send({'op': 'stop', 'mode': 'fast'})
            run.run_to_exit()
            self.read_fifo()
            self.assertEqual(self.seen, b'Ctimeout=1\n1V')
            self.assertTrue(self.writer_closed)
            self.assert_logged('closed with the magic close (postmaster stopped)')
        finally:
            run.close()


if __name__ == '__main__':
    unittest.main()
