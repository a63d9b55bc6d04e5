"""The fence's framing (newline-delimited JSON on a socket that never blocks the fence) and its loop's timers and
signals, on real sockets and real signals."""
from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
import unittest

from fence_support import ScratchTestCase

from fence_channel import MAX_LINE_BYTES, Channel, another_fence_answers, encode
from fence_loop import Loop
from fence_values import is_finite_number, iso_utc, js_text


class Connected(ScratchTestCase):
    """A channel on the fence's end of a socket pair; the test holds the agent's end."""

    def setUp(self) -> None:
        super().setUp()
        self.loop = Loop(self.log)
        fence_end, self.agent = socket.socketpair()
        self.messages: list[object] = []
        self.bad_lines: list[str] = []
        self.closed: list[Channel] = []
        self.channel = Channel(self.loop, fence_end, self.messages.append, self.bad_lines.append, self.closed.append)

    def tearDown(self) -> None:
        self.channel.close()
        self.agent.close()
        self.loop.selector.close()
        os.close(self.loop._wakeup_read)
        os.close(self.loop._wakeup_write)
        super().tearDown()

    def turn(self, ms: float = 50) -> None:
        self.loop._stopped = False
        self.loop.call_later(ms, self.loop.stop)
        self.loop.run()


class Framing(Connected):
    def test_messages_split_across_reads_and_joined_in_one_are_each_delivered_once(self) -> None:
        self.agent.sendall(b'{"op":"disarm"}\n\n{"op":"st')
        self.turn()
        self.agent.sendall(b'op","mode":"fast"}\n{"op":"disarm"}\n')
        self.turn()
        self.assertEqual(self.messages, [{'op': 'disarm'}, {'op': 'stop', 'mode': 'fast'}, {'op': 'disarm'}])

    def test_a_line_that_is_not_json_is_reported_and_the_next_one_still_read(self) -> None:
        self.agent.sendall(b'{"op":\n{"op":"disarm"}\n')
        self.turn()
        self.assertEqual(self.bad_lines, ['{"op":'])
        self.assertEqual(self.messages, [{'op': 'disarm'}])

    def test_a_line_longer_than_any_agent_sends_disconnects_it(self) -> None:
        self.agent.setblocking(False)
        sent = 0
        while sent <= MAX_LINE_BYTES and not self.closed:
            try:
                sent += self.agent.send(b'x' * 65536)
            except BlockingIOError:
                pass
            self.turn(5)
        self.assertEqual(len(self.closed), 1)
        self.assertRegex(self.bad_lines[0], r'^\d+ bytes without a newline: disconnected$')

    def test_what_the_fence_sends_is_one_compact_json_line(self) -> None:
        self.channel.send({'event': 'watchdog', 'running': False})
        self.assertEqual(self.agent.recv(4096), b'{"event":"watchdog","running":false}\n')
        self.assertEqual(encode({'a': [1, None]}), b'{"a":[1,null]}\n')

    def test_an_agent_that_does_not_read_never_blocks_the_fence(self) -> None:
        big = {'event': 'hello', 'padding': 'x' * 100000}
        started = time.monotonic()
        for _ in range(20):
            self.channel.send(big)
        self.assertLess(time.monotonic() - started, 1.0)
        received = b''
        self.agent.settimeout(5)
        while received.count(b'\n') < 20:
            received += self.agent.recv(1 << 20)
            self.turn(1)
        self.assertEqual([json.loads(line)['padding'] for line in received.split(b'\n') if line], [big['padding']] * 20)

    def test_end_sends_the_last_message_then_closes_for_writing(self) -> None:
        self.channel.end({'event': 'exit'})
        self.channel.send({'event': 'late'})
        self.agent.settimeout(5)
        received = b''
        while True:
            chunk = self.agent.recv(4096)
            if not chunk:
                break
            received += chunk
        self.assertEqual(received, b'{"event":"exit"}\n')

    def test_an_agent_hanging_up_closes_the_channel(self) -> None:
        self.agent.close()
        self.agent = socket.socket()
        self.turn()
        self.assertEqual(self.closed, [self.channel])


class AnotherFence(ScratchTestCase):
    def serve_once(self, greeting: bytes, name: str = 'fence.sock') -> str:
        path = str(self.state_dir / name)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(1)

        def answer() -> None:
            connection, _ = server.accept()
            connection.sendall(greeting)
            connection.close()
            server.close()

        threading.Thread(target=answer, daemon=True).start()
        return path

    def test_a_live_fence_answers_with_a_hello(self) -> None:
        self.assertTrue(another_fence_answers(self.serve_once(b'{"event":"hello","pid":1}\n')))

    def test_a_fence_that_hangs_up_or_says_anything_else_is_not_one(self) -> None:
        self.assertFalse(another_fence_answers(self.serve_once(b'')))
        self.assertFalse(another_fence_answers(self.serve_once(b'{"event":"exit"}\n', 'exiting.sock')))
        self.assertFalse(another_fence_answers(str(self.state_dir / 'nobody.sock')))


class Timers(Connected):
    def test_timers_fire_in_deadline_order_and_a_cancelled_one_never(self) -> None:
        fired: list[str] = []
        self.loop.call_later(60, lambda: fired.append('late'))
        cancelled = self.loop.call_later(10, lambda: fired.append('cancelled'))
        self.loop.call_later(20, lambda: fired.append('early'))
        self.loop.call_later(-5, lambda: fired.append('now'))
        cancelled.cancel()
        self.turn(120)
        self.assertEqual(fired, ['now', 'early', 'late'])

    def test_a_timer_fires_no_earlier_than_asked(self) -> None:
        fired_at: list[float] = []
        started = time.monotonic()
        self.loop.call_later(100, lambda: fired_at.append(time.monotonic()))
        self.turn(200)
        self.assertGreaterEqual((fired_at[0] - started) * 1000, 100)

    def test_a_failing_handler_is_logged_and_the_loop_goes_on(self) -> None:
        fired: list[str] = []
        self.loop.call_later(5, lambda: 1 // 0)
        self.loop.call_later(10, lambda: fired.append('after'))
        self.turn(50)
        self.assertEqual(fired, ['after'])
        self.assert_logged('uncaught: ZeroDivisionError: integer division or modulo by zero')

    def test_a_signal_runs_its_handler_between_events(self) -> None:
        got: list[str] = []
        self.loop.on_signal(signal.SIGHUP, lambda: got.append('hup'))
        os.kill(os.getpid(), signal.SIGHUP)
        self.turn(50)
        self.assertEqual(got, ['hup'])


class Values(unittest.TestCase):
    def test_finite_numbers_only(self) -> None:
        values = (0, 1.5, -3, True, float('nan'), float('inf'), '1', None)
        self.assertEqual([is_finite_number(value) for value in values],
                         [True, True, True, False, False, False, False, False])

    def test_times_and_values_are_spelled_as_the_agent_spells_them(self) -> None:
        self.assertEqual(iso_utc(1795670245816), '2026-11-26T05:17:25.816Z')
        self.assertEqual([js_text(value) for value in (None, True, False, 3, 'SIGINT')],
                         ['null', 'true', 'false', '3', 'SIGINT'])


if __name__ == '__main__':
    unittest.main()
